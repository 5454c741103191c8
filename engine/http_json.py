"""POST a JSON body to an OpenAI-compatible endpoint (embeddings, chat completions) with the stdlib.

One place for the request shape both remote options share: JSON in, bearer key when set, a timeout,
and every transport failure turned into one EndpointError whose caller says what to fix.
"""

from __future__ import annotations

import urllib.error
import urllib.request


class EndpointError(Exception):
    """The endpoint could not be reached or answered with an HTTP error; `reason` is safe to log."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def post_json(url: str, body: bytes, api_key: str | None, timeout_s: float) -> str:
    """POST `body` (already JSON-encoded) and return the response text."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return str(response.read().decode("utf-8"))
    except (urllib.error.URLError, TimeoutError, OSError, UnicodeDecodeError) as exc:
        raise EndpointError(f"{type(exc).__name__}: {exc}") from None
