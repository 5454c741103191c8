"""Her activity catalogue and local clock, re-exported from engine/life for the views that read them.

The activity machine lives in engine/life/ (catalogue, plan, choose, machine); daemon views (plot, life,
simulate) and older callers import these names from here.
"""

from __future__ import annotations

from engine.life.catalogue import MEALS, ROUTINE_CATEGORIES, WHY_ZH, ActivitySpec, catalogue, slot_lists
from engine.life.choose import Choice, Situation, choose
from engine.life.fallback import abandoned_text, completion_text, details_for, render, resumed_text
from engine.life.localtime import (
    DAY_STARTS_AT_H,
    HOUR,
    MINUTE,
    at_local,
    day_of,
    local_hour,
    local_time,
    rng_for,
)
from engine.life.plan import make_plan, next_anchor, sleep_window

__all__ = [
    "DAY_STARTS_AT_H", "HOUR", "MEALS", "MINUTE", "ROUTINE_CATEGORIES", "WHY_ZH", "ActivitySpec", "Choice", "Situation",
    "abandoned_text", "at_local", "catalogue", "choose", "completion_text", "day_of", "details_for", "local_hour",
    "local_time", "make_plan", "next_anchor", "render", "resumed_text", "rng_for", "sleep_window", "slot_lists",
]
