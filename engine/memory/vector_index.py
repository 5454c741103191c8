"""In-process exact vector index: the float32 matrix of all memory vectors, scanned with one numpy matmul.

At 100k memories sqlite-vec's brute-force vec0 scan costs ~65 ms on this 2-core machine (its bit[]
column ~25 ms, and binary codes of e5 vectors lose too much: the top-24 overlap with the exact
neighbours was 0.23 at 8x rescoring); one BLAS matrix-vector product over the same vectors costs
~5 ms and is exact. The price is RAM: 1.5 KB per memory (150 MB at 100k). The matrix is built once
per process from mem_embedding, extended with rows added since, and rebuilt when the embedding
model record changes (anima reembed).

Vectors may arrive out of id order (engine/memory/indexer.py fills memories written with
embed=False, possibly after a newer memory got its vector synchronously), so extending by "ids
above the last max" alone would miss them for the life of the process: the index also remembers
which ids up to its max had no vector yet and picks their vectors up once they exist.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.store import caches
from engine.store import memory as store

_LOCK = threading.Lock()  # one update of the matrix at a time: it grows in place
LOAD_CHUNK_ROWS = 1024  # vectors read per step when loading (1.5 MB of blobs at e5-small's 384 dims)


@dataclass
class _Index:
    stamp: tuple[Any, ...]
    max_id: int
    id_buffer: np.ndarray  # int64 memory ids; the first `size` are filled
    buffer: np.ndarray  # float32 [capacity, dim], rows L2-normalised; the first `size` are filled
    missing: set[int]  # memory ids <= max_id that had no vector when last looked at
    size: int = 0

    @property
    def ids(self) -> np.ndarray:
        return self.id_buffer[: self.size]

    @property
    def matrix(self) -> np.ndarray:
        return self.buffer[: self.size]


# Keyed by file identity (engine/store/caches.py): a file replaced at the same path (anima restore)
# is never served the old matrix. The fingerprint is the stamp; the index grows in place between builds.
_CACHE: caches.FileCache[_Index] = caches.file_cache("vector_index")


def _stack(rows: Any) -> tuple[np.ndarray, np.ndarray]:
    """(ids, float32 matrix) from (id, embedding blob) rows."""
    ids: list[int] = []
    blobs: list[bytes] = []
    for row in rows:
        ids.append(row["id"])
        blobs.append(row["embedding"])
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    return np.array(ids, dtype=np.int64), np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), -1)


def _load(conn: Any, index: _Index, after_id: int, reserve: int = 0) -> None:
    """Append every vector above `after_id`, LOAD_CHUNK_ROWS blobs at a time (into room for `reserve` rows).

    Joining all the blobs and then copying them into the buffer held the vectors three times over at
    the peak (the blobs, their join, the buffer): 30 MB of RSS for a 9 MB matrix at 6,000 memories,
    450 MB for 150 MB at 100k. A build reserves its count and appends chunks, so its peak is the
    matrix plus one chunk (the untouched spare capacity is not resident); extending by the few
    vectors written since needs no count (the buffer grows by half when full).
    """
    chunk: list[Any] = []
    for row in store.embeddings_after(conn, after_id):
        chunk.append(row)
        if len(chunk) == LOAD_CHUNK_ROWS:
            _append(index, *_stack(chunk), reserve=reserve)
            chunk = []
    _append(index, *_stack(chunk), reserve=reserve)


def _missing(conn: Any, after: int, upto: int) -> set[int]:
    return store.pending_ids_between(conn, after, upto)


def _late_rows(conn: Any, missing: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """The vectors that appeared since for ids that were missing (the indexer filled them)."""
    return _stack(store.vectors_of(conn, sorted(missing)))


def _append(index: _Index, ids: np.ndarray, matrix: np.ndarray, reserve: int = 0) -> None:
    """Add rows in amortised O(1): a full buffer grows by half (of `reserve` rows, when more are coming).
    Stacking a new matrix per added turn copied all of it each time (22 MB at 15k memories, 150 MB at
    100k): under chat load, with the indexer adding vectors every few seconds, that was a quarter of
    the DB thread's time."""
    if not len(ids):
        return
    need = index.size + len(ids)
    if index.buffer.size == 0 or need > index.buffer.shape[0] or matrix.shape[1] != index.buffer.shape[1]:
        wanted = max(need, reserve)
        capacity = max(1024, wanted + wanted // 2)
        buffer = np.empty((capacity, matrix.shape[1]), dtype=np.float32)
        id_buffer = np.empty(capacity, dtype=np.int64)
        if index.size and index.buffer.shape[1] == matrix.shape[1]:
            buffer[: index.size] = index.matrix
            id_buffer[: index.size] = index.ids
        else:
            index.size = 0
        index.buffer, index.id_buffer = buffer, id_buffer
    index.buffer[index.size : need] = matrix
    index.id_buffer[index.size : need] = ids
    index.size = need


def forget(conn: Any) -> None:
    """Drop this database's cached index (after anima reembed in this process)."""
    _CACHE.drop(conn)


def _current(conn: Any) -> _Index:
    """This database's index, built on first use and brought up to date with the vectors written since."""
    # A forget (engine/memory/forget.py) removes vectors below the max id and may free ids for reuse:
    # its generation is part of the stamp, so the matrix is rebuilt and never serves a forgotten row.
    stamp = (*store.embedding_stamp(conn), store.forget_generation(conn))
    max_id = store.max_embedding_id(conn)
    with _LOCK:
        held = _CACHE.peek(conn, 0)
        index = None if held is None else held[1]
        if index is None or index.stamp != stamp or max_id < index.max_id:
            index = _Index(stamp, max_id, np.zeros(0, dtype=np.int64),
                           np.zeros((0, 0), dtype=np.float32), _missing(conn, 0, max_id))
            _load(conn, index, 0, reserve=store.count_embeddings_after(conn, 0))
            _CACHE.put(conn, 0, stamp, index)
        else:
            if index.missing:
                late_ids, late = _late_rows(conn, index.missing)
                _append(index, late_ids, late)
                index.missing.difference_update(int(i) for i in late_ids)
            if max_id > index.max_id:
                _load(conn, index, index.max_id)
                index.missing |= _missing(conn, index.max_id, max_id)
                index.max_id = max_id
        return index


def warm(conn: Any, index_from: int) -> int:
    """Build the index now if recall will use it (the daemon calls this at start), so that the first
    reply does not pay for loading every vector (1.3 s at 100k memories); returns the rows loaded."""
    if store.max_memory_id(conn) < index_from:
        return 0
    return len(_current(conn).ids)


def nearest(conn: Any, query_vec: np.ndarray, n: int, vectors: dict[int, np.ndarray] | None = None
            ) -> dict[int, float]:
    """The n memory ids with the highest cosine to `query_vec`, with their cosines (exact).

    `vectors`, when given, receives the found rows' vectors (copies of the matrix rows): recall needs
    them for the hubness penalty, and reading them here costs nothing, from SQLite a query per recall.
    """
    index = _current(conn)
    ids, matrix = index.ids, index.matrix
    if len(ids) == 0:
        return {}
    scores = matrix @ np.asarray(query_vec, dtype=np.float32)
    n = min(n, len(ids))
    # The n largest without negating a copy of all scores first (400 KB more per recall at 100k).
    top = np.argpartition(scores, len(ids) - n)[len(ids) - n :]
    if vectors is not None:
        vectors.update(zip(ids[top].tolist(), matrix[top], strict=True))
    return {int(ids[i]): float(scores[i]) for i in top}
