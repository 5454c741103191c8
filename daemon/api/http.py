"""The aiohttp application over a CompanionRegistry: routing from the contract, body limits, one exit for every body.

The app serves the companions of a registry (daemon/registry.py): single-file mode's one companion on
the unscoped paths, or a directory's on /v1/companions/{handle}/... (route_table() registers each
companion route both ways; daemon/api/companions.py picks the companion and checks the caller's token
before anything runs). Each companion has her own ApiState (untold index, persona), made lazily.

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
import json
import math
import re
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from aiohttp import web

from daemon.api import companions, privacy, scoped, validation
from daemon.api.errors import ApiError, classify, error_body, openai_error
from daemon.api.metrics import CONTENT_TYPE
from daemon.api.protocol import ACCESS_LOG
from daemon.api.routes import HOST_ROUTES, HOST_VARIANTS, ROUTES
from daemon.api.state import APP, FRESH_INDEX, SENT, TARGET, ApiApp, ApiState
from daemon.registry import CompanionRegistry
from engine.errors import InputError, StorageFullError

Handler = Callable[[web.Request, "ApiState", Any], Awaitable[Any]]
HostHandler = Callable[[web.Request, "ApiApp", Any], Awaitable[Any]]


METRICS_PATH = "/metrics"


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
    """Which companion, auth, size limit and error mapping around every request."""
    app = request.app[APP]
    started = time.perf_counter()
    op = _operation(request)
    target: ApiState | None = None
    try:
        # The companion first (404 unknown, 503 faulted), then whether this caller may ask her (401/403):
        # nothing of hers is read or written before both are settled.
        target = await companions.admit(app, request, op, _is_tcp(request))
        request[TARGET] = target
        limit = app.settings.api.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            # Refused from the header alone: the body is never read.
            raise ApiError(413, "too_large", f"request body is {request.content_length} bytes, over the limit of "
                                             f"{limit} ([api] max_body_bytes)")
        response = await handler(request)
    except asyncio.CancelledError:
        raise
    except ConnectionError:
        # The client went away mid-request: nothing to answer and nothing wrong on our side.
        _log(app, target).info("api.client_disconnected", op=op.operation_id if op else None)
        response = _json(400, error_body("bad_request", "the client closed the connection"))
        response.force_close()
        return response
    except Exception as exc:  # every failure leaves as the Error shape, never a traceback
        status, body = classify(exc)
        if op is not None and is_openai_path(op.path):  # the chat endpoint answers errors as OpenAI does
            body = openai_error(status, body, getattr(exc, "param", None))
        if isinstance(exc, StorageFullError) and target is not None:  # a state (health says so), not a bug
            target.storage_full_log().hit(op=op.operation_id if op else None)
            app.metrics.storage_refusals.inc()
        elif status >= 500 and not isinstance(exc, ApiError):
            _log(app, target).error("api.failed", op=op.operation_id if op else None, status=status,
                                    error=type(exc).__name__, where=_where(exc), detail=_safe_detail(exc))
        response = await respond(app, target, op, status, body, sent=request.get(SENT) or _sent_so_far(request))
        if status == 401:
            response.headers["WWW-Authenticate"] = 'Bearer realm="anima"'
        if status in (408, 413, 415):
            response.force_close()  # the unread body must not be parsed as the next request
    # Logged by the connection once the response is written (daemon/api/protocol.py): the truth the client got.
    op_id = op.operation_id if op else ("metrics" if request.path == METRICS_PATH else None)
    request[ACCESS_LOG] = (_log(app, target), op_id, started, app.metrics.request_done)
    return response


def is_openai_path(path: str) -> bool:
    """The OpenAI-compatible paths (their errors take OpenAI's shape: message, type, param, code)."""
    return scoped.unscoped_path(path) == "/v1/chat/completions"


def _log(app: ApiApp, target: ApiState | None) -> Any:
    """Her log for a request about her (the host binds companion=<handle> to it), else the process's."""
    return target.ctx.log if target is not None else app.log


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


async def respond(app: ApiApp, api: ApiState | None, op: validation.Operation | None, status: int, body: Any,
                  index: privacy.UntoldIndex | None = None, sent: tuple[str, ...] = ()) -> web.Response:
    """The one exit: contract check, privacy projection, serialisation.

    `api` is the companion the response is about: her untold index is the one scanned (`index`, read
    together with the request's data by ApiState.db; without one it is refreshed here). A response of
    the process itself (`api` None: the list of companions, a refusal before any companion was chosen)
    holds nothing of any companion. `sent` are the caller's own strings: they are never a leak when
    they come back (privacy.find_leaks).
    """
    log = _log(app, api)
    try:
        if op is not None:
            validation.validate_response(op, status, body)
        else:
            validation.validate_error(body)
    except validation.ResponseInvalid as exc:
        log.error("api.response_invalid", detail=str(exc))
        status, body = 500, error_body("internal", "the daemon produced an invalid response; see the daemon log")
    if api is None:
        return _json(status, body)
    if index is None:
        try:
            index = api.untold = await api.ctx.store.call(privacy.load_untold, api.untold)
        except Exception as exc:  # cannot check -> cannot send
            log.error("privacy.check_failed", error=type(exc).__name__)
            return _json(503, error_body("unavailable", "the daemon could not check this response; try again"))
    allow_offer = op is not None and scoped.unscoped_path(op.path) == "/v1/share" and status == 200
    data, hits = privacy.find_leaks(body, index, allow_offer_text=allow_offer, sent=sent)
    if hits and not await api.ctx.store.call(privacy.said_in_chat, hits):
        log.error("privacy.blocked", op=op.operation_id if op else None, life_event_ids=hits, status=status)
        return _json(500, error_body("internal", "response withheld by the privacy projection; see the daemon log"))
    return web.Response(body=data, status=status, content_type="application/json", charset="utf-8")


def _json(status: int, body: dict[str, Any]) -> web.Response:
    return web.Response(body=json.dumps(body, ensure_ascii=False).encode("utf-8"), status=status,
                        content_type="application/json", charset="utf-8")


def endpoint(handler: Handler | None, host_handler: HostHandler | None = None
             ) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The route: parse and check, call `handler` with her ApiState (or `host_handler` with the app, for a
    path of the process itself), and send the result through `respond`."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        app = request.app[APP]
        api: ApiState | None = request.get(TARGET)
        op = _operation(request)
        assert op is not None, f"route {request.method} {request.path} is not in openapi.json"
        check_strings(dict(request.match_info), "path")
        check_strings({k: v for k, v in request.query.items()}, "query")
        body = (await read_body(request, op, app.settings.api.body_timeout_s)
                if op.request_schema is not None else None)
        request[SENT] = privacy.caller_strings(body, dict(request.query), dict(request.match_info))
        if api is None:  # companions.admit lets only the process's own paths through without a companion
            assert host_handler is not None, f"{op.method} {op.path} needs a companion"
            result = await host_handler(request, app, body)
        else:
            assert handler is not None, f"{op.method} {op.path} is not a companion's path"
            validation.validate_instants(op, body, api.now())
            result = await handler(request, api, body)
        if isinstance(result, web.StreamResponse):  # a streamed reply (server-sent events) is already sent
            return result
        status, payload = result if isinstance(result, tuple) else (200, result)
        return await respond(app, api, op, status, payload, request.get(FRESH_INDEX), request[SENT])

    return wrapped


async def get_metrics(request: web.Request) -> web.StreamResponse:
    """GET /metrics (outside the JSON contract: Prometheus text). On TCP the listener's token (guard)."""
    app = request.app[APP]
    body = await app.metrics.scrape(app.registry, app.settings.heartbeat.interval_s)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


def route_table() -> list[tuple[str, str, Handler | None, HostHandler | None]]:
    """Every route: each companion route unscoped and under /v1/companions/{handle}/ (made here, never by hand),
    then the process's own routes. Unscoped health and contract also answer for the process (many mode)."""
    table: list[tuple[str, str, Handler | None, HostHandler | None]] = []
    for method, path, handler in ROUTES:
        table.append((method, path, cast(Handler, handler), HOST_VARIANTS.get((method, path))))
        table.append((method, scoped.scoped_path(path), cast(Handler, handler), None))
    table.extend((method, path, None, cast(HostHandler, handler)) for method, path, handler in HOST_ROUTES)
    return table


def make_app(registry: CompanionRegistry, settings: Any, log: Any, token: str | None = None) -> web.Application:
    """The application over the companions of `registry` (one file: SingleCompanion; a directory: the host),
    with every route of the contract; `token` is the TCP listener's bearer token. Served by server.py."""
    app = web.Application(client_max_size=settings.api.max_body_bytes, middlewares=[guard],
                          handler_args={"max_field_size": 8190, "auto_decompress": False,
                                        "keepalive_timeout": settings.api.keepalive_timeout_s,
                                        "lingering_time": 1.0})
    state = ApiApp(registry, settings, log, token)
    app[APP] = state
    declared = set(validation.operations())
    table = route_table()
    for method, path, handler, host_handler in table:
        if (method, path) not in declared:
            raise RuntimeError(f"route {method} {path} is missing from daemon/api/openapi.json "
                               "(python -m daemon.api.scoped --write adds the scoped paths)")
        app.router.add_route(method, path, endpoint(handler, host_handler))
    app.router.add_route("GET", METRICS_PATH, get_metrics)  # Prometheus text, outside the JSON contract
    missing = declared - {(m, p) for m, p, _, _ in table}
    if missing:
        raise RuntimeError(f"openapi.json declares routes with no handler: {sorted(missing)}")

    async def close_pool(_app: web.Application) -> None:
        state.executor.shutdown(wait=False, cancel_futures=True)
        if state._upstream is not None:
            await state._upstream.close()

    app.on_cleanup.append(close_pool)
    return app
