"""DELETE /v1/turns/{turn_id} and DELETE /v1/turns?since=&until=|all=true: forget turns everywhere they live.

The route parses, calls engine/usecases/forget.forget_turns (one transaction on the DB thread, then
the WAL truncation, then this process's RAM vector index dropped) and shapes the counts. The
indexer's watermark is the daemon's own and is brought in line here: a forget can free memory ids
below it for reuse, and a reused id under the watermark would never get its vector. When Litestream
replicates the file, the forget runs with the file out of its hands and her replica is started over
after it (daemon/replication_forget.py).
"""

from __future__ import annotations

import asyncio
import math
from functools import partial
from typing import Any

from aiohttp import web

from daemon.api.state import ApiState
from daemon.replication_forget import config_file, replication_of, start_over, take_out
from engine.errors import InputError
from engine.memory import forget as forgetting
from engine.memory.ingest import parse_ts
from engine.usecases.forget import forget_turns


def _instant(text: str | None, name: str) -> float | None:
    """ISO-8601 with an offset, or Unix seconds."""
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return parse_ts(text, name)
    if not math.isfinite(value):
        raise InputError(f"{name} must be ISO-8601 with an offset or Unix seconds, got {text!r}")
    return value


async def _forget(request: web.Request, api: ApiState, chosen: forgetting.Selection) -> dict[str, Any]:
    # Under Litestream, her file is taken out of replication for the forget and her replica started over
    # after it (daemon/replication_forget.py): else its read transaction keeps the WAL, and its files the turn.
    # One forget of hers at a time: two overlapping ones would hand her file back to Litestream while the
    # other still needs it out of its hands.
    async with api.ctx.forget_lock:
        replication = replication_of(api.ctx.db_path, config_file())
        await asyncio.to_thread(take_out, replication)
        report: forgetting.ForgetReport | None = None
        try:
            report = await api.db(request, partial(forget_turns, actor="api", tz=api.settings.life.tz), chosen,
                                  api.now())
        finally:
            forgotten = report is not None and bool(report.turn_ids) and not report.already_forgotten
            again = await asyncio.to_thread(start_over, replication, forgotten=forgotten)
    assert report is not None  # the forget raised otherwise
    api.query_vectors.clear()  # the forgotten words must not stay behind as vectors of her next query
    indexer = api.ctx.vector_indexer
    if indexer is not None:  # ids above the new max may be handed out again: look there again
        indexer.drain.indexed_upto = min(indexer.drain.indexed_upto, report.max_memory_id)
    if again.get("resumed") is False:
        api.ctx.log.warning("replication.not_resumed", reason="forget", error=again["why_not_resumed"],
                            fix="systemctl restart anima-litestream")
    scrubbed = {"replica_scrubbed": again["replica_scrubbed"]} if again.get("replica_scrubbed") is not None else {}
    api.ctx.log.info("memory.forgotten", actor="api", turns=len(report.turn_ids), **report.counts(),
                     already_forgotten=report.already_forgotten, wal_truncated=report.wal_truncated, **scrubbed)
    return {**report.to_json(), **scrubbed}


async def delete_turn(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    return await _forget(request, api, forgetting.selection(turn_id=request.match_info["turn_id"]))


async def delete_turns(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    query = request.query
    unknown = sorted(set(query) - {"since", "until", "all"})
    if unknown:
        raise InputError(f"DELETE /v1/turns takes since, until or all=true, not {', '.join(unknown)}")
    everything = query.get("all")
    if everything not in (None, "true"):
        raise InputError(f"all must be 'true' to forget every turn, got {everything!r}")
    if everything and ("since" in query or "until" in query):
        raise InputError("give all=true or a time range (since, until), not both")
    chosen = forgetting.selection(since=_instant(query.get("since"), "since"),
                                  until=_instant(query.get("until"), "until"), everything=everything == "true")
    return await _forget(request, api, chosen)


ROUTES = [
    ("DELETE", "/v1/turns/{turn_id}", delete_turn),
    ("DELETE", "/v1/turns", delete_turns),
]
