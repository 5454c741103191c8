"""POST /v1/chat/completions: an OpenAI-compatible reply from the configured model, with her prompt, recorded after.

The route reads the request (engine/chat/request.py), embeds the recall query off the DB thread, lets
engine/usecases/chat.prepare_chat compose her system prompt, calls the upstream model (daemon/api/upstream.py)
with it before the client's own system messages, and answers in the Chat Completions shape: one JSON body,
or with `stream: true` server-sent `chat.completion.chunk` events and `data: [DONE]`. Only when the whole
reply is in hand (and, streamed, was written to the client) does finish_chat record the turn; an upstream
failure, a timeout or a client gone mid-stream records nothing. Errors are OpenAI-shaped (daemon/api/errors.py
openai_error). Logs carry ids, lengths and timings only: never the messages, the prompt or the key.
"""

from __future__ import annotations

import contextlib
import json
import time
from functools import partial
from typing import Any

from aiohttp import web

from daemon.api.errors import ApiError, classify, openai_error
from daemon.api.routes.common import persona_of
from daemon.api.state import APP, ApiState
from daemon.api.upstream import UpstreamError, delta_of, reply_of
from daemon.priority import gate_of
from engine import activity as act
from engine.chat.prompt import load_template
from engine.chat.request import ChatRequest, parse_request
from engine.memory.recall import query_lines
from engine.usecases.chat import (
    ChatFinished,
    PreparedChat,
    finish_chat,
    next_lines,
    prepare_chat,
    recall_query,
)

# Background embedding of the next lines waits at most this long for the replies in flight.
NEXT_LINES_MAX_WAIT_S = 2.0


def upstream_body(api: ApiState, model: Any, request: ChatRequest, prepared: PreparedChat) -> dict[str, Any]:
    """What the model is sent: her prompt first, then the client's system messages, then the conversation."""
    messages = [{"role": "system", "content": prepared.system_prompt}]
    messages += [{"role": "system", "content": m.content} for m in request.client_system() if m.content.strip()]
    messages += [{"role": m.role, "content": m.content} for m in request.dialogue()]
    body: dict[str, Any] = {**request.passed, "model": model.name, "messages": messages, "stream": request.stream}
    if model.max_tokens > 0:
        body["max_tokens"] = model.max_tokens
        body.pop("max_completion_tokens", None)
    if model.temperature >= 0:
        body["temperature"] = model.temperature
    return body


async def _prepare(request: web.Request, api: ApiState, chat: ChatRequest, now: float
                   ) -> tuple[PreparedChat, dict[str, float]]:
    """Her prompt for this request, and where its time went (embed_ms: the query; db_ms: the rest)."""
    base = api.embedder()
    query = recall_query(chat.dialogue()).strip()
    known: dict[str, Any] = {}
    started = time.perf_counter()
    async with gate_of(api.ctx).serving():
        if api.ctx.switches.memory_search and query and len(query) <= api.settings.memory.max_query_chars:
            # The query and each of its lines (recall reads a multi-line query line by line) in one model call.
            # Unlike POST /v1/context, turns still waiting for their vectors are not embedded here: they are
            # this conversation's own last turns, which the client sends in `messages` anyway (and recall
            # still finds them by their words), so the model call is not paid twice before the reply.
            # The lines before a short message were embedded after the last reply (daemon/api/query_vectors.py).
            texts = list(dict.fromkeys([query, *query_lines(query)]))
            known = api.query_vectors.get(texts, now)
            missing = [text for text in texts if text not in known]
            if missing:
                known.update(zip(missing, await api.off_loop(base.embed_queries, missing), strict=True))
        embedded = time.perf_counter()
        name = str((api.ctx.companion or {}).get("name", ""))
        parts = load_template(api.settings.chat.prompt_template)
        prepared: PreparedChat = await api.db(request, prepare_chat, api.settings, persona_of(api),
                                              base, chat, name, parts, known, now)
    done = time.perf_counter()
    return prepared, {"embed_ms": round((embedded - started) * 1000, 1), "db_ms": round((done - embedded) * 1000, 1)}


async def _finish(request: web.Request, api: ApiState, chat: ChatRequest, prepared: PreparedChat,
                  reply: str) -> ChatFinished:
    """Record the turn (and the told offer) once the whole reply is in, as POST /v1/turns would."""
    now = api.now()
    base = api.embedder()
    ts_iso = act.local_time(now, api.settings.life.tz).isoformat(timespec="seconds")
    indexer = api.ctx.vector_indexer
    texts = [t for t in (chat.last_user, reply) if t and t.strip() and "\x00" not in t]
    if prepared.offer_text:
        texts.append(prepared.offer_text)
    if indexer is not None:
        passages = {prepared.offer_text: (await api.off_loop(base.embed_passages, [prepared.offer_text]))[0]} \
            if prepared.offer_text else {}
        embed = False
    else:
        passages = dict(zip(texts, await api.off_loop(base.embed_passages, texts), strict=True)) if texts else {}
        embed = True
    done: ChatFinished = await api.db(request, partial(finish_chat, embed=embed, passages=passages), api.settings,
                                      persona_of(api), base, prepared, chat.last_user, reply, ts_iso, now)
    if done.turn is not None and done.turn.created and indexer is not None:
        indexer.wake()
    request.app[APP].spawn(_embed_next_lines(api, chat.last_user, reply))
    return done


async def _embed_next_lines(api: ApiState, user_text: str, reply: str) -> None:
    """Embed, while the user reads and types, the lines a short next message will be recalled with.

    Waits for the replies being prepared first (it is background work), and skips what the next query
    could not use: memory search off, or lines too long for a query ([memory] max_query_chars).
    """
    lines = next_lines(user_text, reply)
    if not lines or not api.ctx.switches.memory_search or len("\n".join(lines)) >= api.settings.memory.max_query_chars:
        return
    cache = api.query_vectors
    generation = cache.generation
    lines = [line for line in lines if line not in cache.get(lines, api.now())]
    if not lines:
        return
    await gate_of(api.ctx).wait_idle(NEXT_LINES_MAX_WAIT_S)
    try:
        vectors = await api.off_loop(api.embedder().embed_queries, lines)
    except Exception as exc:  # a cache fill: the next request embeds the lines itself
        api.ctx.log.warning("api.chat_next_lines_failed", error=type(exc).__name__, lines=len(lines))
        return
    cache.put(dict(zip(lines, vectors, strict=True)), api.now(), generation)


def _completion(model_name: str, reply: str, finish_reason: str | None, upstream: dict[str, Any],
                created: int, turn_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(upstream.get("id") or f"chatcmpl-{turn_id}"),
        "object": "chat.completion",
        "created": created,
        "model": model_name,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                     "finish_reason": finish_reason or "stop", "logprobs": None}],
    }
    if isinstance(upstream.get("usage"), dict):
        out["usage"] = upstream["usage"]
    return out


def _log_reply(api: ApiState, prepared: PreparedChat, done: ChatFinished | None, reply: str, started: float,
               first_ms: float | None, stream: bool, prepare_ms: float, timings: dict[str, float]) -> None:
    api.ctx.log.info("api.chat_replied", turn_id=prepared.turn_id, stream=stream, reply_chars=len(reply),
                     prepare_ms=prepare_ms, **timings,
                     prompt_chars=len(prepared.system_prompt), recorded=bool(done and done.turn and done.turn.created),
                     offered=prepared.life_event_id, told=done.told_life_event_id if done else None,
                     first_chunk_ms=first_ms, total_ms=round((time.perf_counter() - started) * 1000, 1))


async def post_chat(request: web.Request, api: ApiState, body: Any) -> Any:
    chat = parse_request(body)
    app = request.app[APP]
    upstream = app.upstream()
    if upstream is None:
        raise ApiError(503, "unavailable", "no model is configured: set [model] base_url and name in config.toml "
                                           "(and the key in the environment variable [model] api_key_env names)")
    started = time.perf_counter()
    prepared, timings = await _prepare(request, api, chat, api.now())
    call = upstream_body(api, upstream.config, chat, prepared)
    prepare_ms = round((time.perf_counter() - started) * 1000, 1)  # what anima adds before the model call
    created = int(api.now())
    if chat.stream:
        return await _stream(request, api, upstream, chat, prepared, call, created, started, prepare_ms,
                             timings)
    try:
        completion = await upstream.complete(call)
        reply, finish_reason = reply_of(completion)
    except UpstreamError as exc:
        api.ctx.log.warning("api.chat_upstream_failed", turn_id=prepared.turn_id, status=exc.http_status,
                            reason=exc.code, ms=round((time.perf_counter() - started) * 1000, 1))
        raise
    done = await _finish(request, api, chat, prepared, reply)
    _log_reply(api, prepared, done, reply, started, None, False, prepare_ms, timings)
    return _completion(upstream.config.name, reply, finish_reason, completion, created, prepared.turn_id)


def _sse(payload: Any) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


async def _stream(request: web.Request, api: ApiState, upstream: Any, chat: ChatRequest, prepared: PreparedChat,
                  call: dict[str, Any], created: int, started: float, prepare_ms: float,
                  timings: dict[str, float]) -> web.StreamResponse:
    """Relay the upstream chunks as they come; record the turn when the whole reply was written to the client.

    The response starts with the first upstream chunk, so a model server that is down or silent still gets
    the client a plain 502/504. After that an upstream failure ends the stream with an OpenAI error event
    (no [DONE]) and records nothing.
    """
    response: web.StreamResponse | None = None
    pieces: list[str] = []
    first_ms: float | None = None
    chunk_id = f"chatcmpl-{prepared.turn_id}"
    finish_reason: str | None = None

    def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
        return {"id": chunk_id, "object": "chat.completion.chunk", "created": created, "model": upstream.config.name,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}]}

    try:
        # aclosing: a client gone mid-stream closes the upstream request now, not when the generator is collected.
        async with contextlib.aclosing(upstream.stream(call)) as chunks:
            async for raw in chunks:
                piece, reason = delta_of(raw)
                finish_reason = reason or finish_reason
                if response is None:
                    response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream; charset=utf-8",
                                                                       "Cache-Control": "no-cache"})
                    await response.prepare(request)
                    first_ms = round((time.perf_counter() - started) * 1000, 1)
                    await response.write(_sse(chunk({"role": "assistant", "content": ""}, None)))
                if piece:
                    pieces.append(piece)
                    await response.write(_sse(chunk({"content": piece}, None)))
    except UpstreamError as exc:
        api.ctx.log.warning("api.chat_upstream_failed", turn_id=prepared.turn_id, status=exc.http_status,
                            reason=exc.code, streamed=response is not None,
                            ms=round((time.perf_counter() - started) * 1000, 1))
        if response is None:
            raise
        await _end_with_error(response, exc.http_status, {"error": {"code": exc.code, "message": str(exc)}})
        return response
    except ConnectionError:
        api.ctx.log.info("api.chat_abandoned", turn_id=prepared.turn_id, reason="client disconnected")
        if response is None:
            raise
        return response
    reply = "".join(pieces)
    if response is None:  # an upstream [DONE] with no chunk at all: an empty reply
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream; charset=utf-8",
                                                           "Cache-Control": "no-cache"})
        await response.prepare(request)
        await response.write(_sse(chunk({"role": "assistant", "content": ""}, None)))
    try:
        await response.write(_sse(chunk({}, finish_reason or "stop")))
    except ConnectionError:
        api.ctx.log.info("api.chat_abandoned", turn_id=prepared.turn_id, reason="client disconnected")
        return response
    transport = request.transport
    if transport is None or transport.is_closing():
        api.ctx.log.info("api.chat_abandoned", turn_id=prepared.turn_id, reason="client disconnected")
        return response
    try:
        done = await _finish(request, api, chat, prepared, reply)
    except Exception as exc:  # the stream is open: the failure is told as an error event, not a second response
        api.ctx.log.error("api.chat_record_failed", turn_id=prepared.turn_id, error=type(exc).__name__)
        status, body = classify(exc)
        await _end_with_error(response, status, body)
        return response
    _log_reply(api, prepared, done, reply, started, first_ms, True, prepare_ms, timings)
    try:
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
    except ConnectionError:
        pass  # the reply was complete and recorded; only the end marker was lost
    return response


async def _end_with_error(response: web.StreamResponse, status: int, body: dict[str, Any]) -> None:
    """End an open stream with one OpenAI error event and no [DONE] (the SDK raises it as an APIError)."""
    try:
        await response.write(_sse(openai_error(status, body)))
        await response.write_eof()
    except ConnectionError:
        pass


ROUTES = [("POST", "/v1/chat/completions", post_chat)]
