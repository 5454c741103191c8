"""Which companion a request is for, and whether this caller may ask her: 404/503 for the companion, 401/403 for the token.

Run by daemon/api/http.guard before any handler, so nothing of a companion is read or written for a
caller who may not ask. The rules (contract14.md, openapi.json):

- /v1/companions/{handle}/...: the companion the registry serves under `handle`; unknown handle 404
  `unknown_companion` (in single-file mode 404 `not_found`: use the unscoped path); a known companion
  whose file could not be opened 503 `companion_unavailable` (her health's message says why).
- Unscoped paths: single-file mode's companion; in directory mode 404 `not_found` naming the scoped
  path, except the process's own paths (scoped.HOST_PATHS), which need no companion.
- Tokens: a companion with a token (`anima token`) answers only to `Authorization: Bearer <her token>`,
  on the socket and on TCP alike; no token or a token nobody has is a 401, another companion's token a
  403 (a front end may read its own companion only, also one without a token). On the socket, an open
  companion (no token) ignores any other header, as single-file mode always did.
- TCP: every request needs a bearer token, the listener's ([api] token_env) or a companion's; on a
  companion that has a token of her own, hers is the one that counts. An unknown handle is checked the
  same way first (401/403), so only the listener's token learns that it is unknown (404).
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from aiohttp import web

from daemon.api import scoped
from daemon.api.errors import ApiError
from daemon.api.tokens import SINGLE, digest, matches
from daemon.registry import valid_handle

if TYPE_CHECKING:
    from daemon.api.state import ApiApp, ApiState
    from daemon.api.validation import Operation

TCP_NEEDS_TOKEN = ("TCP clients must send 'Authorization: Bearer <token>' (the token is in the environment variable "
                   "named by [api] token_env, or the companion's own token from anima token)")


def faults_of(registry: Any) -> dict[str, str]:
    """Known companions that are not served, with the reason, when the registry can list them.

    CompanionRegistry answers `fault(handle)` for one handle; a registry serving a directory
    (daemon/host.py) lists them too with `faults() -> {handle: reason}`, shown by GET /v1/companions.
    """
    lister = getattr(registry, "faults", None)
    return dict(lister()) if callable(lister) else {}


async def admit(app: ApiApp, request: web.Request, op: Operation | None, tcp: bool) -> ApiState | None:
    """Her ApiState when the request is for a companion and may ask her; None for the process's own paths.

    Raises ApiError (401, 403, 404, 503) otherwise. An unknown route (op None) passes with None: the
    router answers its 404/405, after the TCP token check.
    """
    if op is None:
        if tcp:
            await _port_token(app, request)
        return None
    if scoped.is_scoped(op.path):
        return await _scoped(app, request, op, tcp)
    single = app.registry.single
    if op.path in scoped.HOST_PATHS:
        # The process's own paths need no companion token (health monitors, the contract, the list);
        # in single-file mode health and contract are hers, read through her state.
        if tcp:
            await _port_token(app, request)
        return None if single is None or op.path == "/v1/companions" else app.state_of(SINGLE, single)
    if single is None:
        rest = op.path.removeprefix("/v1/")
        raise ApiError(404, "not_found", f"this daemon serves a directory of companions: use "
                                         f"/v1/companions/{{handle}}/{rest} (GET /v1/companions lists them)")
    await _authorize(app, request, SINGLE, await app.tokens.of(SINGLE, single), tcp)
    return app.state_of(SINGLE, single)


async def _scoped(app: ApiApp, request: web.Request, op: Operation, tcp: bool) -> ApiState:
    handle = request.match_info["handle"]
    registry = app.registry
    if registry.single is not None:
        raise ApiError(404, "not_found", "this daemon serves one companion: use the path without "
                                         f"/companions/{{handle}}, e.g. {scoped.unscoped_path(op.path)}")
    ctx = registry.get(handle) if valid_handle(handle) else None
    if ctx is None:
        reason = registry.fault(handle) if valid_handle(handle) else None
        if reason is None:
            app.forget(handle)
            if tcp:
                await _unknown_handle_token(app, request)
            raise ApiError(404, "unknown_companion", f"no companion {handle[:64]!r} is served here; "
                                                     "GET /v1/companions lists them")
        # Her tokens as last read still guard what little there is to say (her file cannot be read now).
        await _authorize(app, request, handle, app.tokens.known(handle), tcp)
        if scoped.unscoped_path(op.path) == "/v1/health":
            raise ApiError(503, "companion_unavailable", f"companion {handle} is not served: {reason}")
        raise ApiError(503, "companion_unavailable", f"companion {handle} is not served (her file could not be "
                                                     f"opened); GET /v1/companions/{handle}/health says why")
    await _authorize(app, request, handle, await app.tokens.of(handle, ctx), tcp)
    return app.state_of(handle, ctx)


def _bearer(request: web.Request) -> str | None:
    """The presented bearer token; None when no Authorization header was sent."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, given = header.partition(" ")
    return given.strip() if scheme.lower() == "bearer" else ""


def _is_port_token(app: ApiApp, given: str) -> bool:
    return bool(app.tcp_token) and hmac.compare_digest(given.encode(), (app.tcp_token or "").encode())


async def _authorize(app: ApiApp, request: web.Request, key: str | None, own: frozenset[str], tcp: bool) -> None:
    """Pass when this caller may ask the companion `key` (whose token digests are `own`), else 401/403."""
    given = _bearer(request)
    if given is None:
        if own:
            raise ApiError(401, "unauthorized", f"{_who(key)} has a token: send 'Authorization: Bearer <token>' "
                                                "(made by anima token)")
        if tcp:
            raise ApiError(401, "unauthorized", TCP_NEEDS_TOKEN)
        return
    presented = digest(given)
    if own and matches(presented, own):
        return
    if not own and _is_port_token(app, given):  # the listener's token, also sent on the socket: as before
        return
    found, owner = await app.tokens.owner(presented, app.registry)
    if found and owner == key:  # hers after all: read from her file while the map was rebuilt just now
        return
    if found:
        raise ApiError(403, "forbidden", f"this token is another companion's; {_who(key)} answers only to her own")
    if own:
        raise ApiError(401, "unauthorized", f"the bearer token is not {_who(key)}'s (revoked, or never made); "
                                            "anima token makes one")
    if tcp:
        raise ApiError(401, "unauthorized", TCP_NEEDS_TOKEN)
    # An open companion on the socket: a header she never asked for is ignored, as it always was.


async def _port_token(app: ApiApp, request: web.Request) -> None:
    """TCP without a companion: the listener's token, or any served companion's."""
    given = _bearer(request)
    if given and (_is_port_token(app, given) or (await app.tokens.owner(digest(given), app.registry))[0]):
        return
    raise ApiError(401, "unauthorized", TCP_NEEDS_TOKEN)


async def _unknown_handle_token(app: ApiApp, request: web.Request) -> None:
    """TCP, a handle nobody is served under: answered as a known one would be, so the port cannot be used to
    list handles (issue 25): 401 without a valid token, 403 for a companion's token (it opens only hers);
    only the listener's token (the operator's) goes on to learn the handle is unknown (404)."""
    given = _bearer(request)
    if given and _is_port_token(app, given):
        return
    if given and (await app.tokens.owner(digest(given), app.registry))[0]:
        raise ApiError(403, "forbidden", "this token is another companion's; it opens only her own paths")
    raise ApiError(401, "unauthorized", TCP_NEEDS_TOKEN)


def _who(key: str | None) -> str:
    return "this companion" if key is None else f"companion {key}"
