"""Map every failure to `{"error": {"code", "message"}}` with the right status; never a stack trace to a client.

engine.errors classes carry their own status and code; aiohttp's HTTP exceptions (unknown route,
wrong method, body too large) are mapped by status; anything else is a 500 `internal` whose
message names only the exception type, and the full traceback goes to the log (ids, no text).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from engine.errors import AnimaError, StorageFullError

MAX_MESSAGE_CHARS = 300
STORAGE_FULL_CLIENT_MESSAGE = ("the disk holding the database is full: this write was refused and changed nothing; "
                               "reads still work; retry once the operator has freed space")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    503: "unavailable",
}


class ApiError(AnimaError):
    """An HTTP-level refusal that no engine error describes (401, 413, 415)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.http_status = status
        self.code = code


def error_body(code: str, message: str) -> dict[str, Any]:
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return {"error": {"code": code, "message": message}}


def classify(exc: BaseException) -> tuple[int, dict[str, Any]]:
    """(status, body) for an exception raised while handling a request."""
    if isinstance(exc, AnimaError):
        status = int(exc.http_status)
        code = exc.code
        if isinstance(exc, StorageFullError):
            # A state, not a bug: say what happened and what to do (the path stays in the operator's log).
            return status, error_body(code, STORAGE_FULL_CLIENT_MESSAGE)
        if status >= 500 and not isinstance(exc, ApiError):
            # Store/config failures: the message is for the operator's log, not for the client.
            return status, error_body(code, f"{type(exc).__name__}: the daemon could not serve this request")
        return status, error_body(code, str(exc))
    if isinstance(exc, web.HTTPException):
        status = exc.status
        code = _HTTP_CODES.get(status, "bad_request" if status < 500 else "internal")
        message = {
            404: "no such endpoint; see GET /v1/openapi.json",
            405: "method not allowed on this endpoint; see GET /v1/openapi.json",
            413: "request body is over the limit ([api] max_body_bytes)",
        }.get(status, exc.reason or "request refused")
        return status, error_body(code, message)
    return 500, error_body("internal", f"internal error ({type(exc).__name__}); see the daemon log")


# OpenAI's error `type` for a status (what its SDK and chat apps read beside the message).
_OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 408: "timeout_error", 413: "invalid_request_error",
                 415: "invalid_request_error", 429: "rate_limit_error"}


def openai_error(status: int, body: dict[str, Any], param: str | None = None) -> dict[str, Any]:
    """An Error body in OpenAI's shape for the chat endpoint: message, type, param and code (anima's code kept)."""
    inner = body.get("error", {}) if isinstance(body, dict) else {}
    kind = _OPENAI_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": str(inner.get("message", "")), "type": kind, "param": param,
                      "code": inner.get("code")}}
