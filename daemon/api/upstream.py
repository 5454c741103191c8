"""The client of the upstream model: an OpenAI-compatible Chat Completions call, plain or streamed, over aiohttp.

Every failure becomes one UpstreamError with the status the chat route answers: 502 when the model server
cannot be reached, answers an HTTP error, or answers something that is not a Chat Completion (garbage);
504 when it does not answer within [model] timeout_s (a streamed reply: between two chunks). The messages
are never logged and the key is only ever in the Authorization header.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from daemon.api.errors import ApiError
from engine.model_config import ModelConfig

MAX_LINE_BYTES = 1 << 20  # one SSE line longer than this is not a chat chunk


class UpstreamError(ApiError):
    """The model call failed; `http_status` is 502 (unreachable, HTTP error, garbage) or 504 (timed out)."""


def _bad(message: str) -> UpstreamError:
    return UpstreamError(502, "upstream_error", message)


def _timed_out(timeout_s: float) -> UpstreamError:
    return UpstreamError(504, "upstream_timeout", f"the model server did not answer within {timeout_s:g} s "
                                                  "([model] timeout_s)")


def reply_of(completion: Any) -> tuple[str, str | None]:
    """(content, finish_reason) of a Chat Completion's first choice, or a 502 naming what is missing."""
    try:
        choice = completion["choices"][0]
        content = choice["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _bad("the model server's answer is not a chat completion (no choices[0].message)") from None
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _bad("the model server's answer has a non-text message content")
    reason = choice.get("finish_reason")
    return content, reason if isinstance(reason, str) else None


def delta_of(chunk: Any) -> tuple[str, str | None]:
    """(content piece, finish_reason) of a chat.completion.chunk; ("", None) for a chunk without choices (usage)."""
    if not isinstance(chunk, dict):
        raise _bad("the model server streamed a chunk that is not a JSON object")
    if "error" in chunk:
        raise _bad("the model server streamed an error")
    choices = chunk.get("choices")
    if choices == [] or (choices is None and "usage" in chunk):
        return "", None
    try:
        choice = choices[0]  # type: ignore[index]
        delta = choice.get("delta") or {}
        piece = delta.get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _bad("the model server streamed a chunk that is not a chat.completion.chunk") from None
    if not isinstance(piece, str):
        raise _bad("the model server streamed non-text content")
    reason = choice.get("finish_reason")
    return piece, reason if isinstance(reason, str) else None


class Upstream:
    """One pooled aiohttp session to the configured model server (made on the first call, closed with the app)."""

    def __init__(self, config: ModelConfig):
        self.config = config
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, connect=self.config.connect_timeout_s,
                                              sock_read=self.config.timeout_s))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """The whole Chat Completion for `body` (stream false), or UpstreamError."""
        timeout_s = self.config.timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                async with self._client().post(self.config.chat_url, json=body,
                                               headers=self.config.headers()) as resp:
                    raw = await resp.read()
                    status = resp.status
        except TimeoutError:
            raise _timed_out(timeout_s) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise _bad(f"the model server at [model] base_url could not be reached ({type(exc).__name__})") from None
        if status != 200:
            raise _bad(f"the model server answered HTTP {status}")
        try:
            completion = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _bad("the model server's answer is not JSON") from None
        if not isinstance(completion, dict):
            raise _bad("the model server's answer is not a JSON object")
        return completion

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The streamed chunks for `body` (stream true), parsed, until `[DONE]`; UpstreamError on any failure."""
        timeout_s = self.config.timeout_s
        try:
            async with self._client().post(self.config.chat_url, json=body, headers=self.config.headers()) as resp:
                if resp.status != 200:
                    raise _bad(f"the model server answered HTTP {resp.status}")
                if resp.content_type == "application/json":  # a server that ignores stream: one whole completion
                    try:
                        whole = json.loads(await asyncio.wait_for(resp.read(), timeout_s))
                    except ValueError:
                        raise _bad("the model server's answer is not JSON") from None
                    content, reason = reply_of(whole)
                    yield {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": reason}]}
                    return
                finished = False  # a chunk carried a finish_reason: a stream that then just ends is complete
                while True:
                    try:
                        line = await asyncio.wait_for(resp.content.readline(), timeout_s)
                    except ValueError:  # a line over aiohttp's limit
                        raise _bad("the model server streamed a line too long for a chunk") from None
                    if not line:
                        if finished:
                            return
                        raise _bad("the model server closed the stream before [DONE]")
                    if len(line) > MAX_LINE_BYTES:
                        raise _bad("the model server streamed a line too long for a chunk")
                    text = line.decode("utf-8", errors="replace").strip()
                    if not text or text.startswith(":") or not text.startswith("data:"):
                        continue  # blank separator, SSE comment, or an event/id field
                    data = text[5:].strip()
                    if data == "[DONE]":
                        return
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise _bad("the model server streamed a chunk that is not JSON") from None
                    choices = chunk.get("choices") if isinstance(chunk, dict) else None
                    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                        finished = finished or bool(choices[0].get("finish_reason"))
                    yield chunk
        except TimeoutError:
            raise _timed_out(timeout_s) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise _bad(f"the model server at [model] base_url could not be reached ({type(exc).__name__})") from None
