"""Vectors for memories written without one (record_turn(embed=False)): find them, embed them, write them.

Vectors are derived data, like the FTS tokens, and may lag the acknowledged chat text by a moment
(see engine/memory/ingest.py). Pending = a mem_episodic row with no mem_embedding row, so the work
list lives in the database itself: whatever was pending when a process died is found again by the
next drain, and a batch is one transaction (a crash leaves it all pending or all indexed).

Finding pending rows means an anti-join over mem_episodic: ~100 ms at 100k memories from id 0, but
microseconds above a watermark. Memory rows are never deleted and new ones get ids above every
existing one, so once every id up to W was seen indexed no id <= W can become pending again: the
daemon scans from 0 once at start (the crash case), then only above its watermark (`Drain`).

Read-your-writes: a turn acknowledged a moment ago may still wait here while the next /v1/context
asks for it by meaning. That request embeds the newest few pending rows itself (`fresh_pending_rows`,
bounded by [memory] context_embed_pending and FRESH_WINDOW_S) and writes them with `write_vectors`,
so the cost lands on that one request and the indexer finds them done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.memory.embed import Embedder, check_model
from engine.memory.ingest import write_vector
from engine.store import memory as store
from engine.store.connect import transaction


def pending_memory_ids(conn: Any, limit: int, after: int = 0) -> list[int]:
    """Up to `limit` memory ids above `after` that have no vector yet, oldest first."""
    return [int(row["id"]) for row in pending_rows(conn, limit, after)]


def pending_rows(conn: Any, limit: int, after: int = 0) -> list[Any]:
    """(id, raw) rows of memories without a vector, oldest first."""
    return store.pending_vectors(conn, after, limit)


FRESH_WINDOW_S = 60.0  # only memories written this recently: older pending rows are the indexer's backlog
FRESH_SCAN_IDS = 256  # the anti-join looks at the newest this many ids only, whatever the history size
FRESH_EMBED_MAX_S = 1.0  # the longest a context request waits for its own embedding of them (one row: ~20-40 ms)


def fresh_pending_rows(conn: Any, limit: int, now: float, window_s: float = FRESH_WINDOW_S) -> list[Any]:
    """(id, raw) of at most `limit` memories written in the last `window_s` that have no vector yet, newest first."""
    if limit <= 0:
        return []
    return store.fresh_pending_vectors(conn, now - window_s, FRESH_SCAN_IDS, limit)


def count_pending(conn: Any, after: int = 0) -> int:
    """How many memories above `after` wait for a vector (GET /v1/health reports it as vectors_pending)."""
    return store.count_pending_vectors(conn, after)


def write_vectors(conn: Any, embedder: Embedder, ids: list[int], vectors: Any, now: float) -> int:
    """One transaction: the vectors of `ids`, skipping rows indexed (or deleted) since they were read."""
    written = 0
    with transaction(conn):
        # A model switch (anima reembed) between read and write refuses the batch instead of mixing models.
        check_model(conn, embedder, now)
        for memory_id, vector in zip(ids, vectors, strict=True):
            state = store.vector_state(conn, memory_id)
            if state["has_vector"] or not state["has_memory"]:
                continue
            store.delete_vector(conn, memory_id)  # a stray vec0 row would make the insert fail
            write_vector(conn, memory_id, vector)
            written += 1
    return written


def index_pending(conn: Any, embedder: Embedder, limit: int, now: float = 0.0) -> int:
    """Embed up to `limit` pending memories (outside any write transaction), then write them in one; the count written."""
    rows = pending_rows(conn, limit)
    if not rows:
        return 0
    vectors = embedder.embed_passages([row["raw"] for row in rows])
    return write_vectors(conn, embedder, [int(row["id"]) for row in rows], vectors, now)


def index_all_pending(conn: Any, embedder: Embedder, now: float = 0.0, *, batch: int = 64,
                      progress: Callable[[int, int], None] | None = None) -> int:
    """Drain every pending memory in batches (anima reembed --pending); the count written."""
    total = count_pending(conn)
    done = 0
    after = 0
    while True:
        rows = pending_rows(conn, batch, after)
        if not rows:
            break
        ids = [int(row["id"]) for row in rows]
        done += write_vectors(conn, embedder, ids, embedder.embed_passages([row["raw"] for row in rows]), now)
        after = ids[-1]  # rows skipped as indexed meanwhile are not asked for again
        if progress:
            progress(min(done, total), total)
    return done


@dataclass
class Drain:
    """A draining process's watermark: every memory id <= `indexed_upto` has a vector (see the module docstring)."""

    indexed_upto: int = 0

    def take(self, conn: Any, limit: int) -> tuple[list[Any], int]:
        """The next pending rows above the watermark, and the highest memory id at the time they were read."""
        high = store.max_memory_id(conn)
        return pending_rows(conn, limit, self.indexed_upto), high

    def done(self, rows: list[Any], high: int, limit: int) -> None:
        """Advance the watermark after `rows` (from take) were written."""
        if len(rows) < limit:
            self.indexed_upto = max(self.indexed_upto, high)  # the scan reached the top: nothing below `high` waits
        elif rows:
            self.indexed_upto = max(self.indexed_upto, int(rows[-1]["id"]))

    def pending(self, conn: Any) -> int:
        return count_pending(conn, self.indexed_upto)
