"""POST /v1/context: what she should keep in mind for the next reply (cited memories, mood, energy, activity)."""

from __future__ import annotations

import importlib
from typing import Any

from aiohttp import web

from daemon.api.http import ApiState
from daemon.api.routes.common import PrecomputedEmbedder, inner_view, persona_of
from daemon.priority import gate_of
from engine import inner
from engine.consolidate.relational import relationship_view
from engine.memory.context import record_injection
from engine.memory.recall import query_lines, recall
from engine.store.core import controls as read_controls


def extra_sources() -> tuple[Any, ...]:
    """Consolidated facts join recall when the consolidation part is installed (engine.consolidate.facts_recall)."""
    try:
        module = importlib.import_module("engine.consolidate.facts_recall")
    except ImportError:
        return ()
    return (module.fact_hits,)


def build_context(conn: Any, settings: Any, persona: Any, embedder: Any, query: str, budget: int | None,
                  turn_id: str | None, query_vec: Any, now: float) -> dict[str, Any]:
    switches = read_controls(conn)
    result = recall(conn, embedder, query, settings=settings.memory, controls=switches, now=now, budget=budget,
                    query_vec=query_vec, extra_sources=extra_sources())
    injection_id = record_injection(conn, result, turn_id, now) if result.context else None
    snapshot = inner.inner_snapshot(conn, settings, persona, now)
    consolidated = switches.get("memory_search", True) and switches.get("memory_facts", True)
    return {
        "injection_id": injection_id,
        "query": result.query,
        "mode": result.mode,
        "context": result.context,
        "hits": [h.to_json() for h in result.hits],
        "relationship": relationship_view(conn) if consolidated else [],
        **inner_view(snapshot),
    }


async def post_context(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    async with gate_of(api.ctx.services).serving():  # background embedding waits while a reply is prepared
        return await _context(request, api, body)


async def _context(request: web.Request, api: ApiState, body: dict[str, Any]) -> dict[str, Any]:
    now = api.now()
    base = api.embedder()
    query = body["query"]
    query_vec = None
    known: dict[str, Any] = {}
    if api.ctx.controls.get("memory_search", True) and query.strip() and len(query) <= api.settings.memory.max_query_chars:
        # The query and, for a multi-line one, each of its lines: one model call, off the DB thread.
        texts = list(dict.fromkeys([query.strip(), *query_lines(query.strip())]))
        known = dict(zip(texts, await api.off_loop(base.embed_queries, texts), strict=True))
        query_vec = known[query.strip()]
    embedder = PrecomputedEmbedder(base, queries=known)
    out = await api.db(request, build_context, api.settings, persona_of(api), embedder, query,
                                   body.get("budget"), body.get("turn_id"), query_vec, now)
    api.ctx.log.debug("api.context", injection_id=out["injection_id"], hits=len(out["hits"]),
                      chars=len(out["context"]), mode=out["mode"])
    return out


ROUTES = [("POST", "/v1/context", post_context)]
