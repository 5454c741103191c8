"""aiohttp's per-connection handler, made quiet and contract-shaped: parser errors answer JSON, request bytes never reach a log.

aiohttp answers a request it cannot parse (bad request line, header too long, bad chunking...) from
`RequestHandler.handle_error`, as `text/plain`, after logging the exception at error level through
the `aiohttp.server` logger: and the exception's message quotes the raw request bytes (issue 11: a
chat canary reached the log 602 times). Here that one exit answers `{"error": {...}}` with the status
aiohttp chose and logs only the exception's class name, at debug level; the handler's stdlib
loggers are a logger that drops everything, so no other path can print bytes either.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from daemon.api.errors import error_body

_SILENT = logging.getLogger("anima.api.aiohttp_silenced")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False
_SILENT.disabled = True  # aiohttp's own messages may quote request bytes: none of them is ever emitted

# Request key: (log, operation id, perf_counter start, metrics callback) set by the API's guard; the access line is written
# once the response has been written (QuietRequestHandler.finish_response), so it says what the client got.
ACCESS_LOG: Any = web.RequestKey("anima_access_log", tuple) if hasattr(web, "RequestKey") else "anima_access_log"

_CODES = {400: "bad_request", 408: "request_timeout", 413: "too_large", 431: "too_large"}
_MESSAGES = {
    400: "malformed HTTP request; see GET /v1/openapi.json",
    408: "the request did not arrive in time",
    413: "request head or body is too large",
    431: "request headers are too large",
    500: "internal error; see the daemon log",
    504: "the request took too long",
}


def error_response(status: int, exc: BaseException | None) -> web.Response:
    """The contract's Error shape for a request aiohttp refused before any route ran; closes the connection."""
    if status not in _MESSAGES:
        status = 400 if status < 500 else 500
    message = _MESSAGES[status]
    if exc is not None and status < 500:
        message = f"{message} ({type(exc).__name__})"  # the class names the problem; its text may quote bytes
    body = json.dumps(error_body(_CODES.get(status, "internal" if status >= 500 else "bad_request"), message)).encode()
    response = web.Response(body=body, status=status, content_type="application/json", charset="utf-8")
    response.force_close()
    return response


class QuietRequestHandler(RequestHandler):
    """RequestHandler whose refusals are the Error shape and whose logging carries class names only."""

    api_log: Any = None  # the daemon's structlog logger, set by QuietServer
    gate: Any = None  # the ConnectionGate that admitted this connection, told when it closes
    gate_socket: Any = None  # its accepted socket (the gate peeks at unread bytes before calling it idle)

    def handle_error(self, request: Any, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        log = self.api_log
        if log is not None:
            log.debug("api.request_refused", status=status, error=type(exc).__name__ if exc else None)
        if request.writer.output_size > 0:
            raise ConnectionError("response already started; cannot send an error response")
        return error_response(status, exc)

    async def finish_response(self, request: Any, resp: Any, start_time: float | None) -> tuple[Any, bool]:
        """Write the response, then log `api.request` with the status the client got: a response that could
        not be written (the client or the gate closed the connection) says `delivered=False` (issue 25: a
        burst's log said 200 for answers that were dropped)."""
        resp, reset = await super().finish_response(request, resp, start_time)
        access = request.get(ACCESS_LOG) if hasattr(request, "get") else None
        if access is not None:
            log, op, started, counted = access
            fields: dict[str, Any] = {"op": op, "status": resp.status,
                                      "ms": round((time.perf_counter() - started) * 1000, 2)}
            if reset:
                fields["delivered"] = False
            log.debug("api.request", **fields)
            counted(op, resp.status, not reset)
        return resp, reset

    def log_exception(self, *args: Any, **kw: Any) -> None:
        log = self.api_log
        if log is not None:
            exc = kw.get("exc_info")
            log.debug("api.connection_failed", error=type(exc).__name__ if isinstance(exc, BaseException) else None)


class QuietServer(web.Server):
    """web.Server that builds QuietRequestHandler connections and gives them the daemon's logger."""

    api_log: Any = None

    def __call__(self) -> RequestHandler:
        handler = QuietRequestHandler(self, loop=self._loop, **self._kwargs)
        handler.api_log = self.api_log
        return handler

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        gate = getattr(handler, "gate", None)
        if gate is not None:  # exactly once per connection: aiohttp drops its manager after this call
            handler.gate = None  # type: ignore[attr-defined]
            gate.released()


class QuietAppRunner(web.AppRunner):
    """AppRunner whose server is a QuietServer with silenced stdlib loggers."""

    def __init__(self, app: web.Application, *, log: Any, **kwargs: Any):
        kwargs.setdefault("access_log", None)
        super().__init__(app, logger=_SILENT, **kwargs)
        self._api_log = log

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = QuietServer  # same state, our __call__: aiohttp offers no factory hook for handlers
        server.api_log = self._api_log  # type: ignore[attr-defined]
        return server
