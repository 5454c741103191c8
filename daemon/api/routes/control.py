"""GET /v1/control, GET/PUT /v1/control/{key}: her runtime switches (validated before anything is written).

An old switch name (engine/control.py ALIASES, e.g. "heartbeat" for "mood_step") is accepted, answered
under its current name, and noted once per request as `control.deprecated`. A change is one
engine/usecases/switches.change_switch call; its one log event is `control.changed`, the same name
a CLI change is logged under (daemon/app.py logs those from event_log on its next beat).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aiohttp import web

from daemon.api.state import ApiState
from engine import control
from engine.errors import NotFoundError
from engine.usecases.switches import SwitchChange, change_switch, current_switches


def _spec(api: ApiState, key: str) -> control.ControlKey:
    if key not in control.REGISTRY and key not in control.ALIASES:
        raise NotFoundError(f"unknown control key {key[:64]!r} (known: {', '.join(sorted(control.REGISTRY))})")
    spec = control.spec_of(key)
    if key != spec.name:
        api.ctx.log.info(control.DEPRECATED_EVENT, key=key, now=spec.name, actor="api")
    return spec


def _view(spec: control.ControlKey, value: Any) -> dict[str, Any]:
    return {"key": spec.name, "value": value, "default": spec.default, "description": spec.description}


async def list_controls(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    switches: control.Switches = await api.db(request, current_switches)
    return {"controls": [_view(spec, switches.value(name)) for name, spec in control.REGISTRY.items()]}


async def get_control(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    spec = _spec(api, request.match_info["key"])
    switches: control.Switches = await api.db(request, current_switches)
    return _view(spec, switches.value(spec.name))


async def put_control(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    key = request.match_info["key"]
    spec = _spec(api, key)
    value = body["value"]
    if isinstance(value, str):  # "off"/"on" as the CLI takes them (issue 25): one parser for both
        value = control.parse_value(spec.name, value)
    control.check_value(spec.name, value)  # 400 before any write
    change: SwitchChange = await api.db(request, partial(change_switch, actor="api"), key, value, api.now())
    # Effective for the API at once (a new value, not a patch); the heartbeat re-reads for the rest.
    api.ctx.switches = change.switches
    api.ctx.controls = change.switches.legacy()
    api.ctx.log.info(control.CHANGED_EVENT, **change.log_fields())
    return {"key": change.key, "old": change.old, "value": change.new}


ROUTES = [
    ("GET", "/v1/control", list_controls),
    ("GET", "/v1/control/{key}", get_control),
    ("PUT", "/v1/control/{key}", put_control),
]
