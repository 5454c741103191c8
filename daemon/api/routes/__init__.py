"""The API's routes, one module per resource; ROUTES (a companion's) and HOST_ROUTES (the process's) are what
daemon/api/http.py registers, each companion route also under /v1/companions/{handle}/ (and checks against the contract)."""

from __future__ import annotations

from daemon.api.routes import (
    chat,
    companions,
    context,
    control,
    forget,
    life,
    meta,
    persona,
    share,
    state,
    turns,
)

ROUTES = [
    *turns.ROUTES,
    *forget.ROUTES,
    *context.ROUTES,
    *chat.ROUTES,
    *share.ROUTES,
    *persona.ROUTES,
    *state.ROUTES,
    *life.ROUTES,
    *control.ROUTES,
    *meta.ROUTES,
]
HOST_ROUTES = [*companions.ROUTES]
HOST_VARIANTS = companions.VARIANTS
