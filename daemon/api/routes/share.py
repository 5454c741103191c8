"""The sharing channel: POST /v1/share offers zero or one untold life event; POST /v1/share/{id}/receipt makes it told.

The offer is the one place her untold text leaves the daemon (the privacy projection allows the
`offer.text` field of this route only). The event stays untold until the front end's receipt says
which turn carried it; the receipt marks it told and indexes it as a memory in ONE transaction, so
it becomes recallable and consolidatable at the same instant. Offers without a receipt expire.
A receipt names a turn that was recorded (POST /v1/turns first, with the reply that told it): a
receipt for a turn nobody recorded would make her life "told" in a conversation that never happened.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from daemon.api.http import ApiState
from daemon.api.routes.common import PrecomputedEmbedder, iso, persona_of
from engine import inner
from engine.errors import ConflictError, NotFoundError
from engine.memory.ingest import index_life_event
from engine.share import SharePolicy, decide
from engine.store import share as offers
from engine.store import transaction
from engine.store.core import controls as read_controls
from engine.store.life import mark_told
from engine.store.queries import q


def policy_of(settings: Any) -> SharePolicy:
    api = settings.api
    return SharePolicy(
        min_gap_s=api.share_min_gap_s, max_offers_per_event=api.share_max_offers_per_event,
        event_cooldown_s=api.share_event_cooldown_s, max_age_h=api.share_max_age_h,
        recency_half_life_h=api.share_recency_half_life_h, min_willingness=api.share_min_willingness,
        threshold=api.share_threshold,
    )


def _offer_body(share_id: str, ts: float, text: str, expires_at: float) -> dict[str, Any]:
    return {"share_id": share_id, "text": text, "ts": ts, "ts_iso": iso(ts), "expires_at": expires_at}


def offer(conn: Any, settings: Any, persona: Any, turn_id: str, query: str | None, now: float) -> dict[str, Any]:
    """Decide and record an offer in one transaction; a turn asking again gets its open offer back."""
    policy = policy_of(settings)
    with transaction(conn):
        switches = read_controls(conn)
        if not switches.get("sharing", True):
            return {"offer": None, "reason": "sharing_off", "life_event_id": None}
        existing = offers.open_offer_for_turn(conn, turn_id, now)
        if existing is not None:
            body = _offer_body(existing["id"], existing["ts"], existing["text"], existing["expires_at"])
            return {"offer": body, "reason": "already_offered", "life_event_id": existing["life_event_id"]}
        pool = offers.candidates(conn, now, policy.max_age_h * 3600.0)
        mood = inner.inner_snapshot(conn, settings, persona, now)["mood"] if pool else {"v": 0.0, "a": 0.0}
        decision = decide(pool, query, sociability=float(getattr(persona, "sociability", 0.5)),
                          valence=float(mood["v"]), arousal=float(mood["a"]), now=now,
                          last_offer_at=offers.last_offer_at(conn), policy=policy)
        if decision.life_event_id is None:
            return {"offer": None, "reason": decision.reason, "life_event_id": None}
        chosen = next(c for c in pool if c.life_event_id == decision.life_event_id)
        share_id = offers.insert_offer(conn, chosen.life_event_id, turn_id, now, settings.api.share_offer_ttl_s)
        body = _offer_body(share_id, chosen.ts, chosen.text, now + settings.api.share_offer_ttl_s)
        return {"offer": body, "reason": "offered", "life_event_id": chosen.life_event_id,
                "score": round(decision.score, 3)}


async def post_share(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    now = api.now()
    out = await api.db(request, offer, api.settings, persona_of(api), body["turn_id"], body.get("query"), now)
    if out["reason"] == "offered":
        api.ctx.log.info("share.offered", share_id=out["offer"]["share_id"], life_event_id=out["life_event_id"],
                         turn_id=body["turn_id"], score=out.get("score"))
    return {"offer": out["offer"], "reason": out["reason"]}


def offer_text(conn: Any, share_id: str) -> str | None:
    row = offers.get_offer(conn, share_id)
    return None if row is None else str(row["text"])


def receipt(conn: Any, embedder: Any, share_id: str, turn_id: str, now: float) -> dict[str, Any]:
    """Told: mark_told + memory row + offer received, in one transaction (idempotent for the same turn)."""
    with transaction(conn):
        row = offers.get_offer(conn, share_id)
        if row is None:
            raise NotFoundError(f"no share offer {share_id!r}; ask POST /v1/share for an offer first")
        if row["status"] == "received":
            if row["receipt_turn_id"] != turn_id:
                raise ConflictError(f"share offer {share_id} was already receipted by another turn")
            memory_id = offers.memory_for_life_event(conn, row["life_event_id"])
            return {"share_id": share_id, "told": True, "told_at": row["told_at"] or row["received_at"],
                    "turn_id": turn_id, "memory_id": memory_id, "created": False}
        if row["status"] == "expired" or row["expires_at"] <= now:
            raise ConflictError(f"share offer {share_id} expired; it stays untold (ask POST /v1/share again)")
        if row["told"]:
            raise ConflictError(f"the life event of share offer {share_id} was already told through another offer")
        if conn.execute(q("api_turn_roles"), {"turn_id": turn_id}).fetchone() is None:
            raise ConflictError(f"turn {turn_id!r} was never recorded; POST /v1/turns with the reply that told it, "
                                "then send the receipt")
        mark_told(conn, row["life_event_id"], turn_id, now)
        memory_id = index_life_event(conn, embedder, row["life_event_id"], now)
        offers.receive_offer(conn, share_id, row["life_event_id"], turn_id, now)
        return {"share_id": share_id, "told": True, "told_at": now, "turn_id": turn_id, "memory_id": memory_id,
                "created": True, "life_event_id": row["life_event_id"]}


async def post_receipt(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    share_id = request.match_info["share_id"]
    now = api.now()
    base = api.embedder()
    text = await api.db(request, offer_text, share_id)
    passages = {}
    if text is not None:
        passages[text] = (await api.off_loop(base.embed_passages, [text]))[0]
    out = await api.db(request, receipt, PrecomputedEmbedder(base, passages=passages), share_id,
                                   body["turn_id"], now)
    if out.pop("created"):
        api.ctx.log.info("share.told", share_id=share_id, life_event_id=out.pop("life_event_id"),
                         turn_id=body["turn_id"], memory_id=out["memory_id"])
    return out


ROUTES = [
    ("POST", "/v1/share", post_share),
    ("POST", "/v1/share/{share_id}/receipt", post_receipt),
]
