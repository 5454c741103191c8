"""POST /v1/context: what she should keep in mind for the next reply (cited memories, mood, energy, activity).

The question is `query`, or `messages` (the recent conversation in OpenAI's shape, for front ends that
keep their own model call): then the recall query is the last user message, as the chat endpoint reads it.

Reads its writes: a turn acknowledged by POST /v1/turns a moment ago may not have its vector yet
(the memory part's indexer adds it in the background, and yields to requests like this one). So
this request embeds the newest few of those rows itself ([memory] context_embed_pending, written in
the last engine.memory.indexer.FRESH_WINDOW_S) after the query, writes their vectors, and then
recalls: the turn is found by meaning, not only by its words. It never waits for the indexer, and
waits for its own embedding at most FRESH_EMBED_MAX_S (then the turn is found by its words only).

The route parses, prepares the vectors off the DB thread and shapes; engine/usecases/context.py
builds the context in one transaction. The daemon's cached switches (ctx.switches, this beat's)
only decide whether vectors are worth preparing; the transaction reads its own and they decide
the answer.

The block it returns is only offered: the reply's POST /v1/turns confirms it (engine/memory/usage.py),
and only then are its memories strengthened. An empty recall records no injection.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
from aiohttp import web

from daemon.api.routes.common import inner_view, persona_of
from daemon.api.state import APP, ApiState
from daemon.priority import gate_of
from engine.chat.request import parse_request
from engine.memory.indexer import FRESH_EMBED_MAX_S, fresh_pending_rows
from engine.memory.recall import query_lines
from engine.usecases.chat import recall_query
from engine.usecases.context import ContextBuilt, build_context


def _view(built: ContextBuilt) -> dict[str, Any]:
    result = built.result
    return {
        "injection_id": built.injection_id,
        "query": result.query,
        "mode": result.mode,
        "context": result.context,
        "hits": [h.to_json() for h in result.hits],
        "relationship": built.relationship,
        **inner_view(built.snapshot),
    }


def query_of_messages(messages: list[Any], max_chars: int) -> str:
    """The recall query of a conversation sent in OpenAI's shape: its last user message (with the turn before
    it when short), as the chat endpoint reads it; at most `max_chars` ([memory] max_query_chars)."""
    return recall_query(parse_request({"messages": messages}).dialogue())[:max_chars]


async def post_context(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    async with gate_of(api.ctx).serving():  # background embedding waits while a reply is prepared
        out = await _context(request, api, body)
    request.app[APP].metrics.context_seconds.observe(time.perf_counter() - started)  # GET /metrics
    return out


async def _fresh_rows(api: ApiState, now: float) -> list[Any]:
    """The newest pending rows this request should embed itself; no DB trip while the indexer has caught up.

    Only while this is the one reply being prepared: a companion has one user, so several context
    requests at once are many chats on one file (bench/api.py's 20 paced clients), where embedding
    other chats' turns put context p50 up 1.5-2x; there, as before, turns are found by their words
    until the indexer reaches them.
    """
    indexer = api.ctx.vector_indexer
    limit = api.settings.memory.context_embed_pending
    if (indexer is None or limit <= 0 or not indexer.may_have_pending()
            or not api.ctx.switches.memory_hybrid or gate_of(api.ctx).inflight > 1):
        return []  # without an indexer, turns are embedded inline: nothing is pending
    rows: list[Any] = await api.ctx.store.call(fresh_pending_rows, limit, now)
    return rows


async def _fresh_vectors(api: ApiState, base: Any, rows: list[Any]) -> tuple[list[int], Any] | None:
    """Vectors for `rows`, computed here within FRESH_EMBED_MAX_S; None when there are none.

    Rows another request is embedding right now are waited for, not embedded twice
    (daemon.memory_component.FreshEmbeddings).
    """
    indexer = api.ctx.vector_indexer
    if not rows or indexer is None:
        return None

    async def embed(texts: list[str]) -> Any:
        return await api.off_loop(base.embed_passages, texts)

    try:
        # Bounded: a stuck or starved model costs this reply at most FRESH_EMBED_MAX_S, and the
        # turn is still found by its words; the indexer embeds it later.
        got = await indexer.fresh.vectors_for(rows, embed, FRESH_EMBED_MAX_S)
    except TimeoutError:
        api.ctx.log.warning("api.context_fresh_timed_out", rows=len(rows), wait_s=FRESH_EMBED_MAX_S)
        return None
    if not got:
        return None
    ids = sorted(got)
    return ids, np.stack([np.asarray(got[i], dtype=np.float32) for i in ids])


async def _context(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    now = api.now()
    base = api.embedder()
    query = body.get("query") or query_of_messages(body["messages"], api.settings.memory.max_query_chars)
    known: dict[str, Any] = {}
    fresh: tuple[list[int], Any] | None = None
    if (api.ctx.switches.memory_search and query.strip()
            and len(query) <= api.settings.memory.max_query_chars):
        # The query and, for a multi-line one, each of its lines: one model call, off the DB thread,
        # while the DB thread looks for turns still waiting for their vectors.
        texts = list(dict.fromkeys([query.strip(), *query_lines(query.strip())]))
        vectors, rows = await asyncio.gather(api.off_loop(base.embed_queries, texts), _fresh_rows(api, now))
        known = dict(zip(texts, vectors, strict=True))
        fresh = await _fresh_vectors(api, base, rows)
    built = await api.db(request, build_context, api.settings, persona_of(api), base, query,
                         body.get("budget"), body.get("turn_id"), known, now, fresh)
    out = _view(built)
    api.ctx.log.debug("api.context", injection_id=out["injection_id"], hits=len(out["hits"]),
                      chars=len(out["context"]), mode=out["mode"], fresh_embedded=len(fresh[0]) if fresh else 0)
    return out


ROUTES = [("POST", "/v1/context", post_context)]
