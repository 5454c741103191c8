"""Lineage keys: which single-valued user fact (home, work_shift, pet:芝麻 ...) a sentence states, or `none`.

The vocabulary is closed and lives in engine/data/lineage.toml (read its header for the rule).
Matching is nearest-prototype by embedding, with cue words as the stronger evidence: e5-style
sentence vectors of unrelated Chinese sentences sit within a few hundredths of each other, so
an embedding alone would invent keys, and an invented key is what lets one fact retire another.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from engine.errors import ConfigError

NONE = "none"
_PROTOTYPE_CACHE: dict[tuple[Any, ...], np.ndarray] = {}


@dataclass(frozen=True)
class KeySpec:
    name: str  # "home" or a template "pet:{name}"
    about: str
    cues: tuple[str, ...]
    prototypes: tuple[str, ...]
    name_patterns: tuple[re.Pattern[str], ...] = ()

    @property
    def family(self) -> str:
        return self.name.split(":", 1)[0]


@dataclass(frozen=True)
class Vocabulary:
    keys: tuple[KeySpec, ...]
    threshold: float
    margin: float
    cue_bonus: float

    def families(self) -> set[str]:
        return {k.family for k in self.keys}


@dataclass(frozen=True)
class KeyMatch:
    key: str  # "home", "pet:芝麻" or "none"
    family: str
    score: float
    why: str  # "cue+prototype", "prototype", "below_threshold", "no_margin", "no_name", "several_cues"
    # Further keys the same sentence states, each with its own cue ("我是医院的夜班护士": job and work_shift).
    also: tuple[KeyMatch, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for k in (self.key, *(m.key for m in self.also)) if k != NONE)


def parse_vocabulary(raw: dict[str, Any], source: str = "lineage.toml") -> Vocabulary:
    """Validate the catalogue once: every key named, with prototypes; name keys with name patterns."""
    keys = []
    seen = set()
    for entry in raw.get("key", []):
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{source}: every [[key]] needs a name")
        if name in seen:
            raise ConfigError(f"{source}: key {name!r} is listed twice")
        seen.add(name)
        prototypes = tuple(entry.get("prototypes", []))
        if not prototypes:
            raise ConfigError(f"{source}: key {name!r} needs at least one prototype sentence")
        patterns = tuple(re.compile(p) for p in entry.get("name_patterns", []))
        if "{name}" in name and not patterns:
            raise ConfigError(f"{source}: key {name!r} has a {{name}} part but no name_patterns")
        keys.append(KeySpec(name, str(entry.get("about", "")), tuple(entry.get("cues", [])), prototypes, patterns))
    if not keys:
        raise ConfigError(f"{source}: no [[key]] entries")
    return Vocabulary(tuple(keys), float(raw.get("threshold", 0.95)), float(raw.get("margin", 0.01)),
                      float(raw.get("cue_bonus", 0.05)))


@cache
def vocabulary() -> Vocabulary:
    text = (resources.files("engine") / "data" / "lineage.toml").read_text(encoding="utf-8")
    return parse_vocabulary(tomllib.loads(text))


class LineageMatcher:
    """Holds the prototype vectors of one embedder; `match(texts, vectors)` keys a batch of sentences."""

    def __init__(self, embedder: Any, vocab: Vocabulary | None = None):
        self.vocab = vocab or vocabulary()
        sentences: list[str] = []
        owners: list[int] = []
        for index, spec in enumerate(self.vocab.keys):
            sentences.extend(spec.prototypes)
            owners.extend([index] * len(spec.prototypes))
        self._owners = np.array(owners)
        # Prototype vectors depend only on the model and the catalogue: embed them once per process.
        cache_key = (getattr(embedder, "name", type(embedder).__name__), int(getattr(embedder, "dim", 0)),
                     tuple(sentences))
        if cache_key not in _PROTOTYPE_CACHE:
            _PROTOTYPE_CACHE[cache_key] = np.asarray(embedder.embed_passages(sentences), dtype=np.float32)
        self._vectors = _PROTOTYPE_CACHE[cache_key]

    def match(self, texts: Sequence[str], vectors: np.ndarray) -> list[KeyMatch]:
        if len(texts) == 0:
            return []
        sims = np.asarray(vectors, dtype=np.float32) @ self._vectors.T  # (n, prototypes)
        results = []
        for row, text in zip(sims, texts, strict=True):
            per_key = np.full(len(self.vocab.keys), -1.0)
            np.maximum.at(per_key, self._owners, row)
            results.append(choose_key(self.vocab, text, [float(s) for s in per_key]))
        return results


def choose_key(vocab: Vocabulary, text: str, prototype_scores: Sequence[float]) -> KeyMatch:
    """Pure rule: add the cue bonus, take the best key if it clears the threshold and the margin.

    One sentence may state several single-valued facts at once ("我是医院的夜班护士": a job and a
    shift). When two or more keys each have a cue in the sentence and clear the threshold, the
    sentence gets all of them (best first) and the margin is not needed: the cues, not the
    embedding, tell them apart. A later "我换到白班了" then retires only the shift.
    """
    several = _cued_keys(vocab, text, prototype_scores)
    if len(several) >= 2:
        return KeyMatch(several[0].key, several[0].family, several[0].score, "several_cues", tuple(several[1:]))
    return _best_key(vocab, text, prototype_scores)


def _cued_keys(vocab: Vocabulary, text: str, prototype_scores: Sequence[float]) -> list[KeyMatch]:
    found = []
    for spec, base in zip(vocab.keys, prototype_scores, strict=True):
        score = float(base) + vocab.cue_bonus
        if score < vocab.threshold or not any(c in text for c in spec.cues):
            continue
        key = spec.name
        if "{name}" in key:
            name = extract_name(spec, text)
            if name is None:
                continue
            key = key.replace("{name}", name)
        found.append(KeyMatch(key, spec.family, score, "cue+prototype"))
    found.sort(key=lambda m: -m.score)
    return found


def _best_key(vocab: Vocabulary, text: str, prototype_scores: Sequence[float]) -> KeyMatch:
    scores = []
    for spec, base in zip(vocab.keys, prototype_scores, strict=True):
        cue = any(c in text for c in spec.cues)
        scores.append((float(base) + (vocab.cue_bonus if cue else 0.0), cue, spec))
    scores.sort(key=lambda s: -s[0])
    best, cue, spec = scores[0]
    runner_up = scores[1][0] if len(scores) > 1 else -1.0
    if best < vocab.threshold:
        return KeyMatch(NONE, NONE, best, "below_threshold")
    if best - runner_up < vocab.margin:
        return KeyMatch(NONE, NONE, best, "no_margin")
    key = spec.name
    if "{name}" in key:
        name = extract_name(spec, text)
        if name is None:
            return KeyMatch(NONE, NONE, best, "no_name")
        key = key.replace("{name}", name)
    return KeyMatch(key, spec.family, best, "cue+prototype" if cue else "prototype")


def extract_name(spec: KeySpec, text: str) -> str | None:
    for pattern in spec.name_patterns:
        found = pattern.search(text)
        if found and found.group("name"):
            return found.group("name")
    return None
