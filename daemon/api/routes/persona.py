"""GET /v1/persona: who she is, read-only — name, birth facts, the chart in plain Chinese, the persona parameters."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from daemon.api.routes.common import iso, persona_of
from daemon.api.state import ApiState
from engine.errors import NotFoundError
from engine.persona import describe_persona
from engine.usecases.state import read_companion


async def get_persona(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    companion = api.ctx.companion or await api.db(request, read_companion)
    if companion is None:
        raise NotFoundError("this database holds no companion yet; create her with: anima init")
    persona = persona_of(api)
    chart = companion["chart"]
    return {
        "name": companion["name"],
        "birth": {
            "local": companion["birth_local"],
            "tz": companion["birth_tz"],
            "place": companion.get("birth_place"),
            "utc_iso": iso(companion["birth_utc"]),
        },
        "chart": describe_persona(chart, persona),
        "persona": persona.to_dict(),
    }


ROUTES = [("GET", "/v1/persona", get_persona)]
