"""The process's own paths in directory mode: GET /v1/companions (handles only), and the unscoped health and contract.

In single-file mode GET /v1/companions says so (mode "single", no handles: her paths are the unscoped
ones); /v1/health and /v1/openapi.json are then hers (daemon/api/routes/state.py, meta.py). In
directory mode the unscoped health is the process's: alive while the loop answers and some companion's
heartbeat is fresh, with counts of the companions served and faulted. Nothing here reads a companion's
file: names and text stay behind her own (token-guarded) paths.
"""

from __future__ import annotations

import os
from typing import Any

from aiohttp import web

from daemon.api import validation
from daemon.api.companions import faults_of
from daemon.api.state import ApiApp


async def list_companions(request: web.Request, app: ApiApp, body: None) -> dict[str, Any]:
    registry = app.registry
    if registry.single is not None:
        return {"mode": "single", "companions": []}
    served = [{"handle": h, "served": True, "reason": None} for h in registry.handles()]
    faulted = [{"handle": h, "served": False, "reason": reason} for h, reason in sorted(faults_of(registry).items())]
    return {"mode": "many", "companions": sorted(served + faulted, key=lambda c: str(c["handle"]))}


async def host_health(request: web.Request, app: ApiApp, body: None) -> dict[str, Any]:
    registry = app.registry
    contexts = [ctx for ctx in map(registry.get, registry.handles()) if ctx is not None]
    faulted = len(faults_of(registry))
    # The freshest heartbeat: one scheduler drives them all, so a stuck loop makes every one stale.
    ages = [max(0.0, ctx.clock.monotonic() - ctx.last_beat_mono) for ctx in contexts]
    age = round(min(ages), 3) if ages else None
    out: dict[str, Any] = {
        "alive": age is None or app.settings.heartbeat.is_fresh(age),
        "db_ok": faulted == 0,
        "last_beat_at": max((ctx.last_beat_at for ctx in contexts), default=None) or None,
        "last_beat_age_s": age,
        "loop_lag_ms": round(max((ctx.loop_lag_ms for ctx in contexts), default=0.0), 2),
        "pid": os.getpid(),
        "companions": len(contexts),
        "faulted": faulted,
    }
    lag = getattr(registry, "heartbeat_lag", None)
    if callable(lag):
        out["heartbeat_lag"] = lag()
    db_threads = getattr(registry, "db_threads", None)
    if callable(db_threads):
        out["db_threads"] = db_threads()
    if contexts:
        out["now"] = contexts[0].clock.now()
    if faulted:
        out["db_error"] = f"{faulted} companion(s) not served; GET /v1/companions says why"
    return out


async def host_openapi(request: web.Request, app: ApiApp, body: None) -> dict[str, Any]:
    return validation.document()


ROUTES = [("GET", "/v1/companions", list_companions)]
# The unscoped paths that answer for the process when no single companion is served.
VARIANTS = {("GET", "/v1/health"): host_health, ("GET", "/v1/openapi.json"): host_openapi}
