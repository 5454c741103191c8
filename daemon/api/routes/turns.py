"""POST /v1/turns: record what was said (idempotent by turn_id); her mood responds and her activity is interrupted.

The route parses, embeds off the DB thread and shapes; the work is engine/usecases/turns.record_turn
(one transaction). Vectors are left to the memory part's indexer, woken after the write
(engine/memory/ingest.py says why). Without a running indexer (no ctx.vector_indexer)
the turn is embedded here first, so no vector is ever stranded.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aiohttp import web

from daemon.api.routes.common import mood_of, persona_of
from daemon.api.state import ApiState
from engine.memory.ingest import TurnInput
from engine.usecases.turns import TurnRecorded, record_turn


def _view(done: TurnRecorded) -> dict[str, Any]:
    return {
        "turn_id": done.turn_id,
        "created": done.created,
        "memory_ids": list(done.memory_ids),
        "message_ids": list(done.message_ids),
        "mood": mood_of(done.mood),
        "interrupted": done.interrupted,
        "used_injection_id": done.use.injection_id,
        "strengthened": done.use.strengthened,
    }


async def post_turn(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    turn = TurnInput(turn_id=body["turn_id"], user=body.get("user"), companion=body.get("companion"),
                     ts_iso=body["ts"], salience=body.get("salience"), affect=body.get("affect"))
    injection_id = body.get("injection_id")
    now = api.now()
    base = api.embedder()
    texts = [t for t in (turn.user, turn.companion) if t and t.strip() and "\x00" not in t]
    indexer = api.ctx.vector_indexer
    if indexer is not None:
        record = partial(record_turn, embed=False, injection_id=injection_id)
        done: TurnRecorded = await api.db(request, record, api.settings, persona_of(api), base, turn, now)
        if done.created:
            indexer.wake()
    else:
        vectors = await api.off_loop(base.embed_passages, texts) if texts else []
        record = partial(record_turn, embed=True, injection_id=injection_id,
                         passages=dict(zip(texts, vectors, strict=True)))
        done = await api.db(request, record, api.settings, persona_of(api), base, turn, now)
    if done.created:
        api.ctx.log.info("api.turn_recorded", turn_id=turn.turn_id, memories=len(done.memory_ids),
                         chars=sum(len(t) for t in texts), interrupted=done.interrupted,
                         strengthened=done.use.strengthened)
    return _view(done)


ROUTES = [("POST", "/v1/turns", post_turn)]
