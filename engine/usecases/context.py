"""Build the context for a reply: recall with her switches and the registered sources, record the block, add her state.

`recall_for` is the recall both the API's context and `anima recall` run (the same switches, the same
sources); `build_context` adds what a reply needs on top of it, in one transaction: the fresh vectors
a request embedded itself (read-your-writes, daemon/api/routes/context.py), the injection record of
the block it returns, the relationship view and her inner state. The block is only offered: the
reply's turn confirms it (engine/usecases/turns.py), and only then are its memories strengthened.
An empty recall records no injection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import inner
from engine.consolidate.facts_recall import fact_hits
from engine.consolidate.relational import relationship_view
from engine.control import Switches
from engine.memory.context import record_injection
from engine.memory.indexer import write_vectors
from engine.memory.recall import RecallResult, recall
from engine.memory.sources import RecallSource
from engine.persona import Persona
from engine.settings import Settings
from engine.store import transaction
from engine.store.core import read_switches

# Sources that join recall beside the chat memories and told life that recall itself searches:
# registered here, explicitly, so a reader sees every kind of hit in one place. Consolidated
# facts (FactHit) come from engine/consolidate; the switch memory_facts turns them off.
RECALL_SOURCES: tuple[RecallSource, ...] = (fact_hits,)


@dataclass(frozen=True)
class ContextBuilt:
    injection_id: str | None  # None when the block is empty (nothing recorded)
    result: RecallResult
    relationship: list[dict[str, Any]]
    snapshot: dict[str, Any]  # engine.inner.inner_snapshot: mood, energy, activity (never life-event text)


def recall_for(conn: Any, embedder: Any, query: str, settings: Settings, switches: Switches, now: float,
               **options: Any) -> RecallResult:
    """Recall under `switches` with every registered source; reads only (options: k, budget, as_of, query_vecs)."""
    options.setdefault("tz", settings.life.tz)  # her zone: dates in the block, times the question names
    return recall(conn, embedder, query, settings=settings.memory, switches=switches, now=now,
                  extra_sources=RECALL_SOURCES, **options)


def build_context(conn: Any, settings: Settings, persona: Persona | None, embedder: Any, query: str,
                  budget: int | None, turn_id: str | None, query_vecs: Mapping[str, Any] | None, now: float,
                  fresh: tuple[list[int], Any] | None = None) -> ContextBuilt:
    """One transaction: write the fresh vectors (if any), recall, record the block, read her state.

    `query_vecs` holds the vectors of the query and its lines when the caller embedded them (off this
    thread); `embedder` is the real one, for what only recall knows to embed (a hit's lineage)."""
    with transaction(conn):
        if fresh is not None:
            write_vectors(conn, embedder, fresh[0], fresh[1], now)  # rows the indexer wrote meanwhile are skipped
        switches = read_switches(conn)
        result = recall_for(conn, embedder, query, settings, switches, now, budget=budget, query_vecs=query_vecs)
        injection_id = record_injection(conn, result, turn_id, now) if result.context else None
        snapshot = inner.inner_snapshot(conn, settings, persona, now)
        relationship = relationship_view(conn) if switches.consolidated_recall else []
    return ContextBuilt(injection_id=injection_id, result=result, relationship=relationship, snapshot=snapshot)
