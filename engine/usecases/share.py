"""The sharing channel's use cases: offer zero or one untold life event, take the receipt, and "she told it".

The offer is the one place her untold text leaves the daemon (the privacy projection allows the
`offer.text` field of POST /v1/share only). The event stays untold until the front end's receipt
says which turn carried it; the receipt marks it told and indexes it as a memory in ONE transaction,
so it becomes recallable and consolidatable at the same instant. Offers without a receipt expire.
A receipt names a turn that was recorded (POST /v1/turns first, with the reply that told it): a
receipt for a turn nobody recorded would make her life "told" in a conversation that never happened.

`tell_life_event` is that "told" step on its own: the receipt and `anima life add --told` (a
backstory she has already told) both make a told event recallable through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import feelings as feel
from engine import inner
from engine.errors import ConflictError, NotFoundError
from engine.memory.ingest import index_life_event
from engine.persona import Persona
from engine.settings import Settings
from engine.share import SharePolicy, candidate_of, decide
from engine.store import share as offers
from engine.store import transaction
from engine.store.api import turn_recorded
from engine.store.core import read_switches
from engine.store.life import mark_told


@dataclass(frozen=True)
class Offer:
    """What POST /v1/share answers: the reason, and the offered event when there is one."""

    reason: str  # offered, already_offered, or engine.share.decide's reason for nothing
    share_id: str | None = None
    life_event_id: int | None = None
    ts: float | None = None
    text: str | None = None  # untold text: only the offer body of POST /v1/share may carry it
    expires_at: float | None = None
    score: float | None = None


# Grief or fear about the user's bad news at least this strong holds her small news back (issue 24); a user who
# only says he is tired (心疼 0.45, 担心 0.33) still hears about her day.
USER_LOW_AT = 0.5
LOW_WORDS = frozenset(feel.name_zh(k) for k in ("sad", "worried"))


def user_is_low(shown: Any) -> bool:
    """Whether she is still moved by the user's bad news: grief or worry (>= USER_LOW_AT) whose cause he told her."""
    return any(f["cause"].startswith("你") and f["intensity"] >= USER_LOW_AT and f["name_zh"] in LOW_WORDS
               for f in shown)


def offer(conn: Any, settings: Settings, persona: Persona | None, turn_id: str, query: str | None,
          now: float, mood: dict[str, Any] | None = None) -> Offer:
    """Decide and record an offer in one transaction; a turn asking again gets its open offer back.

    `mood` is the mood to decide with when the caller knows better than the stored one (the chat endpoint:
    how she feels once she has read the message); else her mood now."""
    policy = SharePolicy.from_settings(settings.api)
    with transaction(conn):
        if not read_switches(conn).sharing:
            return Offer("sharing_off")
        existing = offers.open_offer_for_turn(conn, turn_id, now)
        if existing is not None:
            return Offer("already_offered", existing["id"], existing["life_event_id"], existing["ts"],
                         existing["text"], existing["expires_at"])
        pool = [candidate_of(row) for row in offers.candidates(conn, now, policy.max_age_h * 3600.0)]
        if mood is None:
            mood = inner.inner_snapshot(conn, settings, persona, now)["mood"] if pool else {"v": 0.0, "a": 0.0}
        decision = decide(pool, query, sociability=float(getattr(persona, "sociability", 0.5)),
                          valence=float(mood["v"]), arousal=float(mood["a"]), now=now,
                          last_offer_at=offers.last_offer_at(conn), policy=policy,
                          user_low=user_is_low(mood.get("feelings", ())))
        if decision.life_event_id is None:
            return Offer(decision.reason)
        chosen = next(c for c in pool if c.life_event_id == decision.life_event_id)
        share_id = offers.insert_offer(conn, chosen.life_event_id, turn_id, now, settings.api.share_offer_ttl_s)
        return Offer("offered", share_id, chosen.life_event_id, chosen.ts, chosen.text,
                     now + settings.api.share_offer_ttl_s, round(decision.score, 3))


def offer_text(conn: Any, share_id: str) -> str | None:
    """The text an offer carries (to embed it off the DB thread before the receipt); None for no such offer."""
    row = offers.get_offer(conn, share_id)
    return None if row is None else str(row["text"])


def tell_life_event(conn: Any, embedder: Any, life_event_id: int, turn_id: str | None, now: float,
                    passages: Mapping[str, Any] | None = None) -> int:
    """She told it (in turn `turn_id`, or before anima knew her): told=1 once, and its memory row; the memory id.

    Inside the caller's transaction when there is one. Telling a told event again changes nothing.
    `passages` may hold the vector of its text, computed off the DB thread.
    """
    with transaction(conn):
        mark_told(conn, life_event_id, turn_id, now)
        return index_life_event(conn, embedder, life_event_id, now, passages)


@dataclass(frozen=True)
class Receipt:
    """What a receipt answers: the offer, the turn that told it, when, and the memory it became."""

    share_id: str
    turn_id: str
    told_at: float
    memory_id: int | None
    life_event_id: int
    created: bool  # False: the same turn sent this receipt before (nothing was written now)


def receipt(conn: Any, embedder: Any, share_id: str, turn_id: str, now: float,
            passages: Mapping[str, Any] | None = None) -> Receipt:
    """Told: the event told, its memory row and the offer received, in one transaction (idempotent for the same turn)."""
    with transaction(conn):
        row = offers.get_offer(conn, share_id)
        if row is None:
            raise NotFoundError(f"no share offer {share_id!r}; ask POST /v1/share for an offer first")
        if row["status"] == "received":
            if row["receipt_turn_id"] != turn_id:
                raise ConflictError(f"share offer {share_id} was already receipted by another turn")
            return Receipt(share_id, turn_id, row["told_at"] or row["received_at"],
                           offers.memory_for_life_event(conn, row["life_event_id"]), row["life_event_id"], False)
        if row["status"] == "expired" or row["expires_at"] <= now:
            raise ConflictError(f"share offer {share_id} expired; it stays untold (ask POST /v1/share again)")
        if row["told"]:
            raise ConflictError(f"the life event of share offer {share_id} was already told through another offer")
        if not turn_recorded(conn, turn_id):
            raise ConflictError(f"turn {turn_id!r} was never recorded; POST /v1/turns with the reply that told it, "
                                "then send the receipt")
        memory_id = tell_life_event(conn, embedder, row["life_event_id"], turn_id, now, passages)
        offers.receive_offer(conn, share_id, row["life_event_id"], turn_id, now)
        return Receipt(share_id, turn_id, now, memory_id, row["life_event_id"], True)


def expire_offers(conn: Any, now: float) -> int:
    """Close the offers whose time ran out (an unreceipted offer's event stays untold); how many. Each beat."""
    return offers.expire_offers(conn, now)
