"""GET /v1/control, GET/PUT /v1/control/{key}: her runtime switches (validated before anything is written)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from daemon.api.http import ApiState
from engine import control
from engine.errors import NotFoundError
from engine.store.core import controls as read_controls
from engine.store.core import set_control


def _spec(key: str) -> control.ControlKey:
    if key not in control.REGISTRY:
        raise NotFoundError(f"unknown control key {key[:64]!r} (known: {', '.join(sorted(control.REGISTRY))})")
    return control.REGISTRY[key]


def _view(spec: control.ControlKey, value: Any) -> dict[str, Any]:
    return {"key": spec.name, "value": value, "default": spec.default, "description": spec.description}


async def list_controls(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    values = await api.db(request, read_controls)
    return {"controls": [_view(spec, values[name]) for name, spec in control.REGISTRY.items()]}


async def get_control(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    spec = _spec(request.match_info["key"])
    values = await api.db(request, read_controls)
    return _view(spec, values[spec.name])


async def put_control(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(request.match_info["key"])
    value = control.check_value(spec.name, body["value"])  # 400 before any write
    old, new = await api.db(request, set_control, spec.name, value, api.now(), "api")
    api.ctx.controls[spec.name] = new  # effective for the API at once; the heartbeat re-reads for the rest
    # The same event name as a CLI change (the daemon logs those from event_log on its next beat).
    api.ctx.log.info("control.changed", key=spec.name, old=old, new=new, actor="api")
    return {"key": spec.name, "old": old, "value": new}


ROUTES = [
    ("GET", "/v1/control", list_controls),
    ("GET", "/v1/control/{key}", get_control),
    ("PUT", "/v1/control/{key}", put_control),
]
