"""Rebuild mem_vec with another embedding model: embed every memory again, swap the table, record the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.memory import vector_index
from engine.memory.embed import Embedder
from engine.memory.ingest import write_vector
from engine.store import memory as store
from engine.store.connect import transaction


def reembed(conn: Any, embedder: Embedder, now: float, *, batch: int = 64,
            progress: Callable[[int, int], None] | None = None) -> int:
    """Embed all rows first (no lock held), then drop and refill mem_vec in one transaction."""
    rows = store.episodes_for_reembed(conn)
    vectors = np.zeros((len(rows), embedder.dim), dtype=np.float32)
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        vectors[start : start + len(chunk)] = embedder.embed_passages([r["raw"] for r in chunk])
        if progress:
            progress(start + len(chunk), len(rows))
    with transaction(conn):
        store.recreate_vector_tables(conn, embedder.dim)
        for row, vector in zip(rows, vectors, strict=True):
            write_vector(conn, row["id"], vector)
        store.set_embedding_model(conn, embedder.name, embedder.dim, now)
    vector_index.forget(conn)
    return len(rows)
