"""Glue the routes share: her persona object, a precomputed-vector embedder, inner-state projection and time formatting."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from daemon.api.state import ApiState
from engine.chat import feelings
from engine.persona import Persona, persona_of_companion


def persona_of(api: ApiState) -> Persona:
    """Her Persona: the one the inner-life part published, else rebuilt from the companion row."""
    published = api.ctx.services.get("persona")
    if published is not None:
        return published  # type: ignore[no-any-return]
    if api.persona_obj is None:
        api.persona_obj = persona_of_companion(api.ctx.companion) or Persona.from_dict(None)
    return api.persona_obj  # type: ignore[no-any-return]


class PrecomputedEmbedder:
    """An Embedder whose vectors for known texts were computed off the DB thread; others fall back to the real one.

    The engine's record/recall functions embed inside the function they run on the single DB
    thread; computing the vectors first in the API's pool keeps that thread free for other
    requests' SQL while the CPU-heavy model runs.
    """

    def __init__(self, base: Any, passages: dict[str, np.ndarray] | None = None,
                 queries: dict[str, np.ndarray] | None = None):
        self.base = base
        self.name = base.name
        self.dim = base.dim
        self._passages = passages or {}
        self._queries = queries or {}

    def _lookup(self, texts: Sequence[str], known: dict[str, np.ndarray], compute: Any) -> np.ndarray:
        missing = [t for t in texts if t not in known]
        if missing:
            known = {**known, **dict(zip(missing, compute(missing), strict=True))}
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([known[t] for t in texts]).astype(np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._lookup(list(texts), self._passages, self.base.embed_passages)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._lookup(list(texts), self._queries, self.base.embed_queries)


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def mood_of(raw: dict[str, Any]) -> dict[str, Any]:
    """The contract's Mood shape from the inner-life dict (numbers rounded for the wire), with her feelings in
    Chinese words (the inner life's words_zh when it gives them, else a word from the numbers: engine/chat/feelings.py)."""
    return {
        "v": round(float(raw["v"]), 4),
        "a": round(float(raw["a"]), 4),
        "d": round(float(raw["d"]), 4),
        "e": round(float(raw["e"]), 4),
        "label": str(raw.get("label", "")),
        "words_zh": feelings.mood_words(raw),
        **({"feelings": raw["feelings"]} if isinstance(raw.get("feelings"), list) else {}),
    }


def activity_of(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """What she is doing (kind, label, since/until as ISO-8601 in her zone, why, next); never life event text."""
    if not raw:
        return None
    return {key: raw.get(key) for key in ("kind", "label", "since", "until", "why", "next")}


def inner_view(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {
        "mood": mood_of(snapshot["mood"]),
        "energy": round(float(snapshot["energy"]), 4),
        "activity": activity_of(snapshot.get("activity")),
    }
