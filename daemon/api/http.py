"""The aiohttp application: routing from the contract, body limits, bearer auth on TCP, one exit for every body.

Each route handler is `async def handler(request, api, body) -> dict` (or `(status, dict)`); the
wrapper here parses and validates the JSON request body against the operation's schema, and
`respond()` is the single exit every response body (successes and errors alike) goes through:
response validation against the contract, then the privacy projection, then serialisation.

What a request may carry is checked before any handler runs and refused with the Error shape:
a body must be `Content-Type: application/json` (UTF-8) with no Content-Encoding but identity (415;
aiohttp's own decompression is off, so a fake gzip body is never inflated), must arrive within
[api] body_timeout_s (408), and no string in it, in the query or in the path may hold a lone UTF-16
surrogate (400 naming the field: such a string cannot be stored or encoded).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import re
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from aiohttp import web

from daemon.api import privacy, validation
from daemon.api.errors import ApiError, classify, error_body
from daemon.api.gate import RateLimitedLog
from daemon.component import DaemonContext
from engine.errors import InputError, StorageFullError, StoreError

Handler = Callable[[web.Request, "ApiState", Any], Awaitable[Any]]


@dataclass
class ApiState:
    """What handlers share: the daemon context, the untold-text index, and a pool for embedding."""

    ctx: DaemonContext
    token: str | None = None
    untold: privacy.UntoldIndex = field(default_factory=privacy.UntoldIndex)
    executor: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(2, thread_name_prefix="api-embed"))
    persona_obj: Any = None
    _storage_full_log: RateLimitedLog | None = None

    def storage_full_log(self) -> RateLimitedLog:
        """One `api.storage_full` warning per [api] error_log_interval_s, with a count: a full disk refuses
        every write, and a line per refused request would be the log filling the disk further."""
        if self._storage_full_log is None:
            self._storage_full_log = RateLimitedLog(self.ctx.log, "api.storage_full",
                                                    self.settings.api.error_log_interval_s)
        return self._storage_full_log

    def now(self) -> float:
        return self.ctx.clock.now()

    @property
    def settings(self) -> Any:
        return self.ctx.settings

    def embedder(self) -> Any:
        embedder = self.ctx.services.get("embedder")
        if embedder is None:
            raise StoreError("no embedder is running (the memory component did not start)")
        return embedder

    async def db(self, request: web.Request, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(conn, *args)` on the DB thread and refresh the untold-text index in the same call.

        The index read right after the handler's own reads is exactly what its response could
        contain, so the privacy projection needs no second trip through the (busy) DB thread.
        """
        cached = self.untold

        def run(conn: Any, *a: Any) -> tuple[Any, privacy.UntoldIndex]:
            result = fn(conn, *a)
            return result, privacy.load_untold(conn, cached)

        result, index = await self.ctx.store.call(run, *args)
        self.untold = index
        request[FRESH_INDEX] = index
        return result

    async def off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run CPU work (embedding) in the pool, off the event loop and off the DB thread."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)


API = web.AppKey("anima_api", ApiState)
# Request key: the untold index read with this request's last DB call (RequestKey on aiohttp >= 3.12).
FRESH_INDEX: Any = (web.RequestKey("anima_untold_index", privacy.UntoldIndex) if hasattr(web, "RequestKey")
                    else "anima_untold_index")


# Request key: the caller's own strings, which the privacy scan never counts as a leak (privacy.find_leaks).
SENT: Any = (web.RequestKey("anima_sent_strings", tuple) if hasattr(web, "RequestKey") else "anima_sent_strings")


def _is_tcp(request: web.Request) -> bool:
    sock = request.transport.get_extra_info("socket") if request.transport else None
    return sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6)


def _operation(request: web.Request) -> validation.Operation | None:
    route = request.match_info.route
    resource = route.resource
    if resource is None:
        return None
    return validation.operations().get((request.method, resource.canonical))


@web.middleware
async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Auth, size limit and error mapping around every request."""
    api = request.app[API]
    started = time.perf_counter()
    op = _operation(request)
    try:
        if _is_tcp(request):
            _check_token(request, api.token)
        limit = api.settings.api.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            # Refused from the header alone: the body is never read.
            raise ApiError(413, "too_large", f"request body is {request.content_length} bytes, over the limit of "
                                             f"{limit} ([api] max_body_bytes)")
        response = await handler(request)
    except asyncio.CancelledError:
        raise
    except ConnectionError:
        # The client went away mid-request: nothing to answer and nothing wrong on our side.
        api.ctx.log.info("api.client_disconnected", op=op.operation_id if op else None)
        response = _json(400, error_body("bad_request", "the client closed the connection"))
        response.force_close()
        return response
    except Exception as exc:  # every failure leaves as the Error shape, never a traceback
        status, body = classify(exc)
        if isinstance(exc, StorageFullError):  # a state (health says so), not a bug: rate-limited
            api.storage_full_log().hit(op=op.operation_id if op else None)
        elif status >= 500:
            api.ctx.log.error("api.failed", op=op.operation_id if op else None, status=status,
                              error=type(exc).__name__, where=_where(exc), detail=_safe_detail(exc))
        response = await respond(api, op, status, body, sent=request.get(SENT) or _sent_so_far(request))
        if status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="anima"'
        if status in (408, 413, 415):
            response.force_close()  # the unread body must not be parsed as the next request
    api.ctx.log.debug("api.request", op=op.operation_id if op else None, status=response.status,
                      ms=round((time.perf_counter() - started) * 1000, 2))
    return response


def _sent_so_far(request: web.Request) -> tuple[str, ...]:
    """The caller's strings when the request failed before its body was parsed: the query and the path."""
    try:
        return privacy.caller_strings(dict(request.query), dict(request.match_info))
    except Exception:  # an unparsable query: nothing of it can come back in a body either
        return ()


def _where(exc: BaseException) -> str | None:
    """'module.py:123' of the innermost frame: enough to find the bug, no values."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return None if tb is None else f"{tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"


def _safe_detail(exc: BaseException) -> str | None:
    """SQLite's messages name schema objects (no row values), so they may be logged; others may not."""
    if type(exc).__module__.split(".")[0] in ("sqlite3", "pysqlite3"):
        return str(exc)[:200]
    return None


def _check_token(request: web.Request, token: str | None) -> None:
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if not token or scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise ApiError(401, "unauthorized", "TCP clients must send 'Authorization: Bearer <token>' "
                                            "(the token is in the environment variable named by [api] token_env)")


def _reject_constant(name: str) -> Any:
    raise InputError(f"JSON constant {name} is not allowed; send finite numbers")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to inf, which no field can hold
        raise InputError(f"JSON number {text[:40]} is out of range; send finite numbers")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_strings(value: Any, where: str) -> None:
    """InputError naming the first string (value or key) in `value` that holds a lone UTF-16 surrogate.

    JSON's `\\ud800` escape parses to a str that UTF-8 cannot encode: it would fail in SQLite, in
    the tokenizer or in the response, so it is refused here, where the field can still be named.
    """
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise InputError(f"{path} contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape); "
                                 "send valid Unicode text")
        elif isinstance(item, dict):
            for key, sub in item.items():
                stack.append((key, f"{path} key"))
                stack.append((sub, f"{path}.{key}" if isinstance(key, str) and not _SURROGATE.search(key)
                              else f"{path}.?"))
        elif isinstance(item, list):
            stack.extend((sub, f"{path}[{i}]") for i, sub in enumerate(item))


def check_media(request: web.Request) -> None:
    """415 unless a body is JSON in UTF-8 and not encoded (checked from the headers: the body is not read)."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise ApiError(415, "unsupported_media_type", f"Content-Encoding {encoding[:40]!r} is not accepted; "
                                                     "send the JSON body uncompressed")
    if request.content_type != "application/json":
        given = request.headers.get("Content-Type")
        raise ApiError(415, "unsupported_media_type",
                       "a request body must be sent with 'Content-Type: application/json', got "
                       + (repr(given[:60]) if given else "no Content-Type"))
    charset = request.charset
    if charset is not None and charset.lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise ApiError(415, "unsupported_media_type", f"a JSON body must be UTF-8, got charset={charset[:40]!r}")


def _has_body(request: web.Request) -> bool:
    return bool(request.content_length) or "chunked" in request.headers.get("Transfer-Encoding", "").lower()


async def read_body(request: web.Request, op: validation.Operation, timeout_s: float = 10.0) -> Any:
    """The request's JSON body, parsed and validated against the operation's schema (else 400/408/413/415)."""
    if _has_body(request):
        check_media(request)
    try:
        async with asyncio.timeout(timeout_s):
            raw = await request.read()  # raises 413 past client_max_size without buffering the rest
    except TimeoutError:
        raise ApiError(408, "request_timeout", f"the request body did not arrive within {timeout_s:g} s "
                                               "([api] body_timeout_s)") from None
    if not raw.strip():
        if op.request_required:
            raise InputError(f"{op.method} {op.path} needs a JSON body; see GET /v1/openapi.json")
        return None
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except UnicodeDecodeError:
        raise InputError("request body is not UTF-8") from None
    except RecursionError:
        raise InputError("request body nests too deeply") from None
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"request body is not JSON ({exc.args[0][:80] if exc.args else 'parse error'})") from None
    check_strings(body, "body")
    # From here on an error message may quote the body: the privacy scan must know it is the caller's.
    request[SENT] = privacy.caller_strings(body, dict(request.query), dict(request.match_info))
    validation.validate_request(op, body)
    return body


async def respond(api: ApiState, op: validation.Operation | None, status: int, body: Any,
                  index: privacy.UntoldIndex | None = None, sent: tuple[str, ...] = ()) -> web.Response:
    """The one exit: contract check, privacy projection, serialisation.

    `index` is the untold-text index read together with the request's data (ApiState.db); without
    one (errors, routes that read no data) it is refreshed here. `sent` are the caller's own strings:
    they are never a leak when they come back (privacy.find_leaks).
    """
    try:
        if op is not None:
            validation.validate_response(op, status, body)
        else:
            validation.validate_error(body)
    except validation.ResponseInvalid as exc:
        api.ctx.log.error("api.response_invalid", detail=str(exc))
        status, body = 500, error_body("internal", "the daemon produced an invalid response; see the daemon log")
    if index is None:
        try:
            index = api.untold = await api.ctx.store.call(privacy.load_untold, api.untold)
        except Exception as exc:  # cannot check -> cannot send
            api.ctx.log.error("privacy.check_failed", error=type(exc).__name__)
            return _json(503, error_body("unavailable", "the daemon could not check this response; try again"))
    allow_offer = op is not None and op.operation_id == "offerShare" and status == 200
    data, hits = privacy.find_leaks(body, index, allow_offer_text=allow_offer, sent=sent)
    if hits and not await api.ctx.store.call(privacy.said_in_chat, hits):
        api.ctx.log.error("privacy.blocked", op=op.operation_id if op else None, life_event_ids=hits, status=status)
        return _json(500, error_body("internal", "response withheld by the privacy projection; see the daemon log"))
    return web.Response(body=data, status=status, content_type="application/json", charset="utf-8")


def _json(status: int, body: dict[str, Any]) -> web.Response:
    return web.Response(body=json.dumps(body, ensure_ascii=False).encode("utf-8"), status=status,
                        content_type="application/json", charset="utf-8")


def endpoint(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def wrapped(request: web.Request) -> web.StreamResponse:
        api = request.app[API]
        op = _operation(request)
        assert op is not None, f"route {request.method} {request.path} is not in openapi.json"
        check_strings(dict(request.match_info), "path")
        check_strings({k: v for k, v in request.query.items()}, "query")
        body = (await read_body(request, op, api.settings.api.body_timeout_s)
                if op.request_schema is not None else None)
        validation.validate_instants(op, body, api.now())
        request[SENT] = privacy.caller_strings(body, dict(request.query), dict(request.match_info))
        result = await handler(request, api, body)
        status, payload = result if isinstance(result, tuple) else (200, result)
        return await respond(api, op, status, payload, request.get(FRESH_INDEX), request[SENT])

    return wrapped


def make_app(ctx: DaemonContext, token: str | None = None) -> web.Application:
    """The application with every route of the contract; served by server.py or by a test client."""
    from daemon.api.routes import ROUTES

    app = web.Application(client_max_size=ctx.settings.api.max_body_bytes, middlewares=[guard],
                          handler_args={"max_field_size": 8190, "auto_decompress": False,
                                        "keepalive_timeout": ctx.settings.api.keepalive_timeout_s,
                                        "lingering_time": 1.0})
    state = ApiState(ctx=ctx, token=token)
    app[API] = state
    declared = set(validation.operations())
    for method, path, handler in ROUTES:
        if (method, path) not in declared:
            raise RuntimeError(f"route {method} {path} is missing from daemon/api/openapi.json")
        app.router.add_route(method, path, endpoint(cast(Handler, handler)))
    missing = declared - {(m, p) for m, p, _ in ROUTES}
    if missing:
        raise RuntimeError(f"openapi.json declares routes with no handler: {sorted(missing)}")

    async def close_pool(_app: web.Application) -> None:
        state.executor.shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(close_pool)
    return app
