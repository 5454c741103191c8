"""The shape of a recall source: what joins recall beside the chat memories and told life it searches itself.

A source is registered explicitly (engine/usecases/context.RECALL_SOURCES) and returns its own hit type with
its own id field (FactHit.fact_id, never a memory_id), so a reader sees every kind of hit in one place and a
new source cannot pass its ids off as another's.
"""

from __future__ import annotations

from typing import Any, Protocol


class RecallSource(Protocol):
    """Hits for one query: read-only, scored on recall's vector scale ((cos - floor) / (1 - floor))."""

    def __call__(self, conn: Any, query_embedding: Any, query_text: str, *, k: int, now: float,
                 as_of: float | None = None) -> list[Any]: ...
