"""Rebuild mem_vec with another embedding model: embed every distinct text once, swap the table, record the model.

A model switch on a long history embeds for many minutes, so it is resumable: the vectors made so far
are saved every few batches to a checkpoint file beside her database (`<db>.reembed.npz`, mode 0600,
keyed by the sha256 of each text and tagged with the model), and a run after an interruption embeds
only what is missing. Identical texts (chat repeats "好的", "晚安") are embedded once (issue 27). The
file is removed once the swap commits; it holds vectors, never text. The swap itself is one
transaction, and the CLI runs all of it under her daemon lock (daemon/cli/exclusive.py): a turn that
arrived during the embedding would otherwise keep an old-model vector in a table about to be dropped.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.memory import vector_index
from engine.memory.embed import Embedder
from engine.memory.ingest import write_vector
from engine.store import memory as store
from engine.store.connect import transaction

CHECKPOINT_EVERY_S = 10.0  # at most this much embedding is lost to an interruption (plus one batch)


@dataclass(frozen=True)
class ReembedReport:
    memories: int  # rows given a new vector
    distinct: int  # texts embedded (or taken from the checkpoint): identical texts share one vector
    resumed: int  # of those, vectors taken from an interrupted run's checkpoint


def checkpoint_path(db: Path) -> Path:
    return db.with_name(db.name + ".reembed.npz")


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_checkpoint(path: Path | None, embedder: Embedder) -> dict[str, np.ndarray]:
    """The vectors an interrupted run saved for this model; {} when there are none (or another model's)."""
    if path is None or not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as saved:
            if str(saved["model"]) != embedder.name or int(saved["dim"]) != embedder.dim:
                return {}
            return dict(zip((str(k) for k in saved["keys"]), saved["vectors"], strict=True))
    except (OSError, ValueError, KeyError):
        return {}  # a torn or foreign file: start over (it is replaced at the next save)


def save_checkpoint(path: Path, embedder: Embedder, done: dict[str, np.ndarray]) -> None:
    """Write the vectors so far, atomically (a temporary file renamed over the old one), readable by her owner only."""
    temporary = path.with_name(path.name + ".tmp.npz")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        keys = np.array(list(done), dtype="U64")
        vectors = np.stack(list(done.values())).astype(np.float32) if done else np.zeros((0, embedder.dim), np.float32)
        np.savez(out, model=np.array(embedder.name), dim=np.array(embedder.dim), keys=keys, vectors=vectors)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def reembed(conn: Any, embedder: Embedder, now: float, *, batch: int = 64,
            progress: Callable[[int, int], None] | None = None, checkpoint: Path | None = None,
            clock: Callable[[], float] = time.monotonic) -> ReembedReport:
    """Embed each distinct text (resuming from `checkpoint`), then drop and refill mem_vec in one transaction."""
    rows = store.episodes_for_reembed(conn)
    keys = [text_key(r["raw"]) for r in rows]
    text_of = dict(zip(keys, (r["raw"] for r in rows), strict=True))
    saved = load_checkpoint(checkpoint, embedder)
    done = {k: v for k, v in saved.items() if k in text_of}  # vectors of texts since forgotten are dropped
    resumed = len(done)
    todo = [k for k in text_of if k not in done]
    total = len(text_of)
    if progress:
        progress(resumed, total)
    last_saved = clock()
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        done.update(zip(chunk, embedder.embed_passages([text_of[k] for k in chunk]), strict=True))
        if progress:
            progress(resumed + start + len(chunk), total)
        if checkpoint is not None and clock() - last_saved >= CHECKPOINT_EVERY_S and start + len(chunk) < len(todo):
            save_checkpoint(checkpoint, embedder, done)
            last_saved = clock()
    with transaction(conn):
        store.recreate_vector_tables(conn, embedder.dim)
        for row, key in zip(rows, keys, strict=True):
            write_vector(conn, row["id"], done[key])
        store.set_embedding_model(conn, embedder.name, embedder.dim, now)
    vector_index.forget(conn)
    if checkpoint is not None:
        checkpoint.unlink(missing_ok=True)
    return ReembedReport(memories=len(rows), distinct=total, resumed=resumed)
