"""The caller's `affect`: exactly the OpenAPI `Affect` schema, read into a push (dV, dA, dD).

Accepted (daemon/api/openapi.json, components.schemas.Affect, checked by tests/test_appraisal_contract.py):
`valence`, `arousal`, `dominance`, each a number in [-1, 1], at least one of them; and an optional
`intensity` in [0, 1] (default 1) that scales all three, for front ends whose model reports a
direction and a strength separately. Nothing else: an unknown key is an error, not ignored, so a
typo ("valance") cannot silently turn into "no feeling".
"""

from __future__ import annotations

import math
from typing import Any

from engine.errors import InputError

Push = tuple[float, float, float]
DIMENSIONS = ("valence", "arousal", "dominance")
_ALLOWED = (*DIMENSIONS, "intensity")


def _number(key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not low <= value <= high:
        raise InputError(f"affect.{key} must be a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def affect_push(affect: dict[str, Any]) -> Push:
    """{"valence": .., "arousal": .., "dominance": .., "intensity"?: ..} -> (dV, dA, dD); bad input raises InputError."""
    if not isinstance(affect, dict):
        raise InputError(f"affect must be an object with valence, arousal and/or dominance, got {type(affect).__name__}")
    unknown = sorted(str(k) for k in affect if k not in _ALLOWED)
    if unknown:
        raise InputError(f"affect key {unknown[0]!r} is not one of {', '.join(_ALLOWED)}")
    if not any(k in affect for k in DIMENSIONS):
        raise InputError("affect needs at least one of valence, arousal, dominance (each -1 to 1)")
    scale = _number("intensity", affect["intensity"], 0.0, 1.0) if "intensity" in affect else 1.0
    v, a, d = (_number(k, affect[k], -1.0, 1.0) * scale if k in affect else 0.0 for k in DIMENSIONS)
    return (v, a, d)
