"""POST /v1/turns: record what was said (idempotent by turn_id); her mood responds and her activity is interrupted.

The acknowledged write is the chat text (messages, memories, FTS); vectors are left to the memory
part's indexer, woken after the write (engine/memory/ingest.py says why). Without a running indexer
(no ctx.services["vector_indexer"]) the turn is embedded inline so no vector is ever stranded.
The turn also confirms the context block its reply used (its `injection_id`, or the block asked
for this turn_id), in the same transaction: only then are those memories strengthened
(engine/memory/usage.py).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from daemon.api.http import ApiState
from daemon.api.routes.common import PrecomputedEmbedder, mood_of, persona_of
from engine import inner
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.usage import UseConfirmed, confirm_use
from engine.store.core import controls as read_controls
from engine.store.queries import q


def record(conn: Any, settings: Any, persona: Any, embedder: Any, turn: TurnInput, now: float,
           embed: bool = True, injection_id: str | None = None) -> dict[str, Any]:
    """One transaction: messages, memories, the used block confirmed, and (for new text) appraisal and interruption."""
    switches = read_controls(conn)
    seen = {row["role"]: row["text"] for row in conn.execute(q("api_turn_roles"), {"turn_id": turn.turn_id})}
    new_user = turn.user if turn.user and turn.user.strip() and "user" not in seen else None
    new_companion = turn.companion if turn.companion and turn.companion.strip() and "companion" not in seen else None
    effects: dict[str, Any] = {"interrupted": False, "use": UseConfirmed(None, 0)}

    def on_recorded(c: Any) -> None:
        # Before the replay check: a replay confirms nothing twice, but a first confirmation may come late.
        effects["use"] = confirm_use(c, turn.turn_id, injection_id, now)
        if new_user is None and new_companion is None:
            return  # a replay: the turn already moved her
        if switches.get("appraisal", True):
            effects["mood"] = inner.appraise_turn(c, settings, persona, new_user, new_companion, turn.affect, now)
        if switches.get("life", True):
            inner.interrupt_for_chat(c, turn.turn_id, now,
                                   quiet_after_chat_s=settings.life.quiet_after_chat_s)
            effects["interrupted"] = True

    result = record_turn(conn, embedder, turn, now, origin="api", max_text_chars=settings.memory.max_text_chars,
                         on_recorded=on_recorded, embed=embed)
    mood = effects.get("mood")
    if mood is None:
        mood = inner.inner_snapshot(conn, settings, persona, now)["mood"]
    return {
        "turn_id": turn.turn_id,
        "created": result.created,
        "memory_ids": list(result.memory_ids),
        "message_ids": list(result.message_ids),
        "mood": mood_of(mood),
        "interrupted": effects["interrupted"],
        "used_injection_id": effects["use"].injection_id,
        "strengthened": effects["use"].strengthened,
    }


async def post_turn(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    turn = TurnInput(turn_id=body["turn_id"], user=body.get("user"), companion=body.get("companion"),
                     ts_iso=body["ts"], salience=body.get("salience"), affect=body.get("affect"))
    injection_id = body.get("injection_id")
    now = api.now()
    base = api.embedder()
    texts = [t for t in (turn.user, turn.companion) if t and t.strip() and "\x00" not in t]
    indexer = api.ctx.services.get("vector_indexer")
    if indexer is not None:
        out = await api.db(request, record, api.settings, persona_of(api), base, turn, now, False, injection_id)
        if out["created"]:
            indexer.wake()
    else:
        vectors = await api.off_loop(base.embed_passages, texts) if texts else []
        embedder = PrecomputedEmbedder(base, passages=dict(zip(texts, vectors, strict=True)))
        out = await api.db(request, record, api.settings, persona_of(api), embedder, turn, now, True, injection_id)
    if out["created"]:
        api.ctx.log.info("api.turn_recorded", turn_id=turn.turn_id, memories=len(out["memory_ids"]),
                         chars=sum(len(t) for t in texts), interrupted=out["interrupted"],
                         strengthened=out["strengthened"])
    return out


ROUTES = [("POST", "/v1/turns", post_turn)]
