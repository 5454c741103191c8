"""Helpers for the chat tests: a fake upstream model (a real aiohttp server on loopback speaking Chat Completions),
and the official openai client over the daemon's Unix socket.

`FakeModel` records every request it receives (headers and JSON body) and answers by `mode`: "plain"
(a chat.completion with `reply`), streamed chunks when the request asks for them, "garbage" (200 with
a body that is not JSON), "error" (HTTP 500), "slow" (answers after `delay_s`), "stall" (streams the first
piece, then waits `delay_s` before the rest), "ignore_stream" (a whole completion even when asked to stream),
"no_done" (a stream that ends after its finish_reason chunk without `data: [DONE]`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
from aiohttp import web

from engine.settings import ModelSettings

KEY_ENV = "ANIMA_TEST_MODEL_KEY"
KEY = "sk-test-キー-not-for-logs-7f3a"


class FakeModel:
    def __init__(self, reply: str = "嗯，我记得呀。", *, name: str = "fake-model") -> None:
        self.reply = reply
        self.name = name
        self.mode = "plain"
        self.delay_s = 0.0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""
        self.on_request: Callable[[], None] | None = None  # runs as each request arrives (e.g. fill her disk)

    def pieces(self) -> list[str]:
        """The reply in streamed pieces of up to 3 characters (a chunk may split a word)."""
        return [self.reply[i:i + 3] for i in range(0, len(self.reply), 3)]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.on_request is not None:
            self.on_request()
        if self.mode == "error":
            return web.json_response({"error": {"message": "boom"}}, status=500)
        if self.mode == "garbage":
            return web.Response(body=b"<html>not a completion</html>", content_type="text/html")
        if self.mode == "slow":
            await asyncio.sleep(self.delay_s)
        if body.get("stream") and self.mode != "ignore_stream":
            return await self._stream(request)
        return web.json_response({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": self.name}
        await resp.write(f"data: {json.dumps({**base, 'choices': [{'index': 0, 'delta': {'role': 'assistant'}}]})}\n\n"
                         .encode())
        for i, piece in enumerate(self.pieces()):
            if self.mode == "stall" and i == 1:
                await asyncio.sleep(self.delay_s)
            if self.mode == "stream_garbage" and i == 1:
                await resp.write(b"data: {not json\n\n")
                return resp
            chunk = {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            await resp.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        end = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        await resp.write(f"data: {json.dumps(end)}\n\n".encode())
        if self.mode != "no_done":
            await resp.write(b"data: [DONE]\n\n")
        return resp

    async def start(self) -> FakeModel:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    def sent_text(self) -> str:
        """Every request the model received, serialised (for canary scans)."""
        return json.dumps(self.requests, ensure_ascii=False)

    def system_prompt(self, i: int = -1) -> str:
        return str(self.requests[i]["messages"][0]["content"])


def model_settings(url: str, timeout_s: float = 10.0) -> ModelSettings:
    return ModelSettings(base_url=url, name="fake-model", api_key_env=KEY_ENV, timeout_s=timeout_s)


def with_model(settings: Any, url: str, timeout_s: float = 10.0) -> Any:
    return dataclasses.replace(settings, model=model_settings(url, timeout_s))


def client(socket_path: str, base: str = "http://anima/v1", api_key: str = "unused") -> openai.AsyncOpenAI:
    """The official client, unchanged, talking to the daemon over its Unix socket."""
    transport = httpx.AsyncHTTPTransport(uds=socket_path)
    return openai.AsyncOpenAI(base_url=base, api_key=api_key, max_retries=0,
                              http_client=httpx.AsyncClient(transport=transport, timeout=30.0))
