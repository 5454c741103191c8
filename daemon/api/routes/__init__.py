"""The API's routes, one module per resource; ROUTES is what daemon/api/http.py registers (and checks against the contract)."""

from __future__ import annotations

from daemon.api.routes import context, control, forget, life, meta, persona, share, state, turns

ROUTES = [
    *turns.ROUTES,
    *forget.ROUTES,
    *context.ROUTES,
    *share.ROUTES,
    *persona.ROUTES,
    *state.ROUTES,
    *life.ROUTES,
    *control.ROUTES,
    *meta.ROUTES,
]
