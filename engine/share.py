"""The sharing policy: whether she would bring up something from her own day now, and which one (pure).

The chat front end asks on its own channel (POST /v1/share) once per turn. She offers at most one
untold life event, chosen by this policy; nothing here touches the database or a clock.

1. **Willingness** — how much she feels like talking about herself right now:
   `w = clamp(0.5 + 0.5 * (sociability - 0.5) + 0.25 * valence + 0.15 * arousal, 0, 1)`.
   Sociability comes from her persona (0..1); valence and arousal from her current mood (-1..1).
   A low, flat mood makes her keep to herself (below `min_willingness` nothing is offered).
2. **Candidates** — untold events of the last `max_age_h` hours that have not been offered
   `max_offers_per_event` times already and were not offered within `event_cooldown_s`.
3. **Fit** of a candidate: `0.55 * relevance + 0.45 * recency`, where relevance is the token overlap
   between the query (what the conversation is about) and the event text (CJK characters and
   bigrams, ASCII words: |Q ∩ E| / min(|Q|, |E|)), and recency is `exp(-ln2 * age_h / half_life_h)`.
   Without a query, relevance is 0 and only fresh events can pass.
4. **Score** `= w * fit`; the best candidate is offered when its score reaches `threshold`.
5. **Not too often** — no new offer within `min_gap_s` of the previous offer (any event); a turn
   that already holds an open offer gets the same one back (the caller handles that, see
   engine/store/share.py), so asking twice never produces two offers.

Every outcome carries a reason (`offered`, `sharing_off`, `nothing_untold`, `cooldown`,
`not_in_the_mood`, `nothing_fits`) so a front end and a test can see why nothing came.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from engine.memory.tokens import jaccard_tokens
from engine.mood import decay_factor
from engine.settings import ApiSettings


@dataclass(frozen=True)
class SharePolicy:
    """The policy's constants: [api]'s share_* keys (engine/settings.py), each field its key without `share_`."""

    min_gap_s: float
    max_offers_per_event: int
    event_cooldown_s: float
    max_age_h: float
    recency_half_life_h: float
    min_willingness: float
    threshold: float

    @classmethod
    def from_settings(cls, api: ApiSettings) -> SharePolicy:
        """The policy of the running config's [api] share_* keys."""
        return cls(**{f.name: getattr(api, f"share_{f.name}") for f in fields(cls)})


DEFAULT_POLICY = SharePolicy.from_settings(ApiSettings())  # config.toml's [api] share_* defaults


@dataclass(frozen=True)
class Candidate:
    life_event_id: int
    ts: float
    text: str
    offers: int = 0
    last_offered_at: float | None = None


def candidate_of(row: Mapping[str, Any]) -> Candidate:
    """A Candidate from a store row (engine/store/share.candidates)."""
    return Candidate(int(row["life_event_id"]), float(row["ts"]), str(row["text"]), int(row["offers"]),
                     row["last_offered_at"])


@dataclass(frozen=True)
class Decision:
    reason: str
    life_event_id: int | None = None
    score: float = 0.0
    willingness: float = 0.0


def willingness(sociability: float, valence: float, arousal: float) -> float:
    raw = 0.5 + 0.5 * (sociability - 0.5) + 0.25 * valence + 0.15 * arousal
    return min(1.0, max(0.0, raw))


ASKED_RELEVANCE = 0.5  # half the shorter side's words shared: the user named the event, not just "你下午干嘛了"


def relevance(query: str | None, text: str) -> float:
    if not query or not query.strip():
        return 0.0
    q_tokens, e_tokens = jaccard_tokens(query), jaccard_tokens(text)
    if not q_tokens or not e_tokens:
        return 0.0
    return len(q_tokens & e_tokens) / min(len(q_tokens), len(e_tokens))


def recency(age_s: float, half_life_h: float) -> float:
    return decay_factor(age_s, half_life_h)


def eligible(c: Candidate, now: float, policy: SharePolicy) -> bool:
    if c.ts > now or now - c.ts > policy.max_age_h * 3600.0:
        return False
    if c.offers >= policy.max_offers_per_event:
        return False
    return not (c.last_offered_at is not None and now - c.last_offered_at < policy.event_cooldown_s)


def decide(candidates: Sequence[Candidate], query: str | None, *, sociability: float, valence: float,
           arousal: float, now: float, last_offer_at: float | None, enabled: bool = True,
           policy: SharePolicy = DEFAULT_POLICY, user_low: bool = False) -> Decision:
    """Zero or one life event to offer now, with the reason.

    `user_low`: she is still moved by bad news the user told her (engine/feelings.py, issue 24); she holds her
    trivial news back (`not_in_the_mood`) rather than offer a commute sentence to someone grieving; an event
    the user asks about by name (relevance >= `ASKED_RELEVANCE`) is an answer, not trivial news, and still comes.
    """
    if not enabled:
        return Decision("sharing_off")
    if not any(c.ts <= now and now - c.ts <= policy.max_age_h * 3600.0 for c in candidates):
        return Decision("nothing_untold")
    if last_offer_at is not None and now - last_offer_at < policy.min_gap_s:
        return Decision("cooldown")
    pool = [c for c in candidates if eligible(c, now, policy)]
    if not pool:
        return Decision("nothing_fits")  # every recent event was offered recently or often enough
    will = willingness(sociability, valence, arousal)
    if user_low:
        pool = [c for c in pool if relevance(query, c.text) >= ASKED_RELEVANCE]
    if will < policy.min_willingness or not pool:
        return Decision("not_in_the_mood", willingness=will)
    scored = []
    for c in pool:
        fit = 0.55 * relevance(query, c.text) + 0.45 * recency(now - c.ts, policy.recency_half_life_h)
        # Ties go to the newer event: what just happened is what one mentions.
        scored.append((will * fit, c.ts, c.life_event_id))
    score, _, best = max(scored)
    if score < policy.threshold:
        return Decision("nothing_fits", score=score, willingness=will)
    return Decision("offered", life_event_id=best, score=score, willingness=will)
