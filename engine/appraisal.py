"""Appraisal of a chat turn: the push (dV, dA, dD) it gives her mood, from the caller's affect or a small lexicon.

The caller's `affect` (its own model's reading of the turn) wins when given; otherwise the documented
Chinese lexicon in engine/data/appraisal_lexicon.toml gives a cheap, explainable estimate. The
user's words weigh more than her own reply (she reacts to what was said to her).
"""

from __future__ import annotations

import math
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from engine.errors import InputError

Push = tuple[float, float, float]
_AFFECT_KEYS = {"v": 0, "valence": 0, "a": 1, "arousal": 1, "d": 2, "dominance": 2}
USER_WEIGHT = 0.75      # the user's words; her own reply counts for the rest


@cache
def lexicon() -> tuple[tuple[str, ...], dict[str, Push]]:
    data = tomllib.loads((resources.files("engine") / "data" / "appraisal_lexicon.toml").read_text(encoding="utf-8"))
    words = {w: (float(v[0]), float(v[1]), float(v[2])) for w, v in data["words"].items()}
    # Longest negators first so 不太 wins over 不.
    negators = tuple(sorted(data["negators"]["words"], key=len, reverse=True))
    return negators, words


def affect_push(affect: dict[str, Any]) -> Push:
    """The caller's affect {"v"/"valence": .., "a"/"arousal": .., "d"/"dominance": ..}, each in -1..1."""
    out = [0.0, 0.0, 0.0]
    for key, value in affect.items():
        if key not in _AFFECT_KEYS:
            raise InputError(f"affect key {key!r} is not one of v, a, d (valence, arousal, dominance)")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputError(f"affect {key} must be a number from -1 to 1, got {value!r}")
        out[_AFFECT_KEYS[key]] = max(-1.0, min(1.0, float(value)))
    return (out[0], out[1], out[2])


def lexicon_push(text: str | None) -> Push:
    """Mean push of the lexicon words in `text` (a negator right before a word flips its valence)."""
    if not text:
        return (0.0, 0.0, 0.0)
    negators, words = lexicon()
    found: list[Push] = []
    for word, push in words.items():
        start = text.find(word)
        if start < 0:
            continue
        negated = any(text[max(0, start - len(n)):start] == n for n in negators)
        found.append((-push[0] * 0.8, push[1], push[2]) if negated else push)
    if not found:
        return (0.0, 0.0, 0.0)
    n = len(found)
    return (sum(p[0] for p in found) / n, sum(p[1] for p in found) / n, sum(p[2] for p in found) / n)


def appraise(user_text: str | None, companion_text: str | None, affect: dict[str, Any] | None) -> Push:
    """The turn's push on her mood, before gain and loss aversion."""
    if affect:
        return affect_push(affect)
    user = lexicon_push(user_text)
    own = lexicon_push(companion_text)
    return tuple(USER_WEIGHT * u + (1 - USER_WEIGHT) * o for u, o in zip(user, own, strict=True))  # type: ignore[return-value]
