"""The null level of relevance: how close a query comes to generic chat (data/smalltalk.txt) under one embedder.

A memory is related to a query only if it is closer to it than the nearest line of chat that is
about nobody in particular (ranking.is_small_talk). The lines are embedded once per process and
model, as passages (they stand in for memories), on the first recall that needs them.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import numpy as np

_VECTORS: dict[tuple[str, int], np.ndarray] = {}


@cache
def background_lines() -> tuple[str, ...]:
    text = (resources.files("engine.memory") / "data" / "smalltalk.txt").read_text(encoding="utf-8")
    lines = tuple(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if not lines:
        raise ValueError("engine/memory/data/smalltalk.txt has no lines")
    return lines


def background_vectors(embedder: Any) -> np.ndarray:
    """(lines, dim) passage vectors of the background chat for this embedder, computed once per process."""
    key = (str(getattr(embedder, "name", type(embedder).__name__)), int(getattr(embedder, "dim", 0)))
    if key not in _VECTORS:
        _VECTORS[key] = np.asarray(embedder.embed_passages(list(background_lines())), dtype=np.float32)
    return _VECTORS[key]


def background_cosine(embedder: Any, query_vec: np.ndarray) -> float:
    """The query's cosine to its nearest background line: the level an unrelated memory reaches."""
    return float((background_vectors(embedder) @ query_vec).max())
