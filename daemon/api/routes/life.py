"""GET /v1/life?since=&limit=: the life events she has told, oldest first (untold ones never appear here)."""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from daemon.api.routes.common import iso
from daemon.api.state import ApiState
from engine.errors import InputError
from engine.memory.ingest import parse_ts
from engine.usecases.life import told_events

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def parse_since(text: str | None) -> float | None:
    """ISO-8601 with offset, or Unix seconds, in ASCII (float() and int() would take '１２' or '²' too)."""
    if text is None or not text.strip():
        return None
    if not text.isascii():
        raise InputError(f"since must be ISO-8601 or Unix seconds in ASCII digits, got {text[:64]!r}")
    try:
        value = float(text)
    except ValueError:
        return parse_ts(text, "since")
    if not math.isfinite(value):
        raise InputError(f"since must be ISO-8601 or Unix seconds, got {text!r}")
    return value


def parse_limit(text: str | None) -> int:
    if text is None:
        return DEFAULT_LIMIT
    # isdigit() is True for '²' and '٣', which int() then refuses: only ASCII digits, at most 4 of them.
    if not (text.isascii() and text.isdigit() and len(text) <= 4) or not 1 <= int(text) <= MAX_LIMIT:
        raise InputError(f"limit must be an integer from 1 to {MAX_LIMIT} in ASCII digits, got {text[:64]!r}")
    return int(text)


async def get_life(request: web.Request, api: ApiState, body: None) -> dict[str, Any]:
    since = parse_since(request.query.get("since"))
    limit = parse_limit(request.query.get("limit"))
    events = await api.db(request, told_events, since, limit)
    return {"events": [{**e, "ts_iso": iso(e["ts"])} for e in events]}


ROUTES = [("GET", "/v1/life", get_life)]
