"""GET /v1/state (her mood, energy, activity, switches, counts) and GET /v1/health (alive, last beat, lag, db, vectors pending)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from aiohttp import web

from daemon.api.routes.common import inner_view, persona_of
from daemon.api.state import ApiState
from engine import activity as act
from engine.home import home_of
from engine.usecases.state import StateRead, health_check, read_state

HEALTH_DB_TIMEOUT_S = 2.0


def _state_view(read: StateRead) -> dict[str, Any]:
    return {"controls": read.switches.as_dict(), "counts": read.counts, **inner_view(read.snapshot)}


async def get_state(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    now = api.now()
    ctx = api.ctx
    out = _state_view(await api.db(request, read_state, api.settings, persona_of(api), now))
    tz = api.settings.life.tz
    return {
        "now": now,
        # One time rule for the whole response (issue 12): ISO strings are local in her zone with the
        # offset, like activity.since/until, so a front end never compares a UTC "Z" with a local time.
        "now_iso": act.local_time(now, tz).isoformat(timespec="seconds"),
        "tz": tz,
        "name": (ctx.companion or {}).get("name", ""),
        "home": home_of(ctx.companion, api.settings).to_dict(),
        **out,
        "daemon": {
            "pid": os.getpid(),
            "started_at": ctx.started_at,
            "last_beat_at": ctx.last_beat_at,
            "loop_lag_ms": round(ctx.loop_lag_ms, 2),
            "heartbeat_s": api.settings.heartbeat.interval_s,
        },
    }


async def get_health(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    ctx = api.ctx
    now = api.now()
    schema = pending = None
    try:
        async with asyncio.timeout(HEALTH_DB_TIMEOUT_S):
            schema, pending = await api.db(request, health_check, ctx.vector_indexer)
        db_error = getattr(ctx.store, "fault", None)  # reads work on a full disk; writes do not
    except Exception as exc:  # health reports, it does not fail
        ctx.log.warning("api.health_db_failed", error=type(exc).__name__)
        db_error = f"the database does not answer ({type(exc).__name__})"
    db_ok = db_error is None
    last = ctx.last_beat_at or None
    # Age on the monotonic clock: a wall clock set back a day must not make a stopped heart look fresh.
    age = None if last is None else round(max(0.0, ctx.clock.monotonic() - ctx.last_beat_mono), 3)
    # Alive: the loop answers (we are here), the database answers, and the heartbeat is not stuck.
    beating = age is None or api.settings.heartbeat.is_fresh(age)
    out: dict[str, Any] = {
        "alive": db_ok and beating,
        "db_ok": db_ok,
        "now": now,
        "last_beat_at": last,
        "last_beat_age_s": age,
        "loop_lag_ms": round(ctx.loop_lag_ms, 2),
        "pid": os.getpid(),
    }
    if db_error is not None:
        out["db_error"] = db_error
    if schema is not None:
        out["schema_version"] = schema
        out["vectors_pending"] = pending
    return out


ROUTES = [("GET", "/v1/state", get_state), ("GET", "/v1/health", get_health)]
