"""GET /v1/openapi.json: the contract itself, as kept in the repository (daemon/api/openapi.json)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from daemon.api import validation
from daemon.api.state import ApiState


async def get_openapi(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    return validation.document()


ROUTES = [("GET", "/v1/openapi.json", get_openapi)]
