"""Her activity catalogue: kinds with category, time-use group, windows, costs and weather flags, loaded once.

The data is engine/data/activities.toml (readable by a non-programmer); this module validates it once and
hands out frozen `ActivitySpec`s. Narration writes sentences for exactly these keys.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.errors import ConfigError
from engine.persona import CATEGORIES

MEALS = ("breakfast", "lunch", "dinner")
# Categories the day plan places itself (never a free choice): the anchors of her day.
ROUTINE_CATEGORIES = ("sleep", "meal", "chat", "work", "commute", "care", "festival")
USES = ("sleep", "meal", "work", "commute", "domestic", "social", "leisure", "screen", "exercise", "care",
        "learning")
WHY_ZH = {"tired": "累了", "hungry": "饿了", "curious": "好奇", "lonely": "有点想人", "routine": "日常",
          "low_mood": "心情低落", "restless": "坐不住", "relax": "放松一下", "sociable": "想热闹", "resume": "接着做",
          "chat": "在和你聊天", "sleepy": "困了", "work": "上班", "needed": "该做了", "festival": "过节",
          "family": "回家过年", "good_mood": "心情不错", "unsettled": "心里有事睡不着"}
CATEGORY_WHY = {"reading": "curious", "learning": "curious", "creative": "curious", "music": "relax",
                "outdoor": "restless", "exercise": "restless", "social": "sociable", "domestic": "routine",
                "screen": "relax", "rest": "relax"}
SLOT = re.compile(r"\{([a-z_]+)\}")
_NEEDED = ("sleep", "nap", "daydream", "chat", "commute", "work", "wash", "festival", "family_visit", *MEALS)


@dataclass(frozen=True)
class ActivitySpec:
    kind: str
    label: str
    category: str
    use: str
    minutes: tuple[int, int]
    hours: tuple[float, float]
    after_wake_h: float
    before_bed_h: float
    rate: float
    asleep: bool
    mood: tuple[float, float, float]
    min_energy: float
    comfort: bool
    outdoor: bool
    daylight: bool
    out: bool
    disappoint: float
    place: str
    templates: tuple[str, ...]
    let_down: str
    partial: str
    max_per_day: int


def _read() -> dict[str, Any]:
    return tomllib.loads((resources.files("engine") / "data" / "activities.toml").read_text(encoding="utf-8"))


@cache
def catalogue() -> dict[str, ActivitySpec]:
    """The validated activity catalogue (engine/data/activities.toml)."""
    data = _read()
    slots = data["slots"]
    specs = {}
    for kind, row in data["activity"].items():
        where = f"activities.toml [activity.{kind}]"
        category = row["category"]
        if category not in CATEGORIES and category not in ROUTINE_CATEGORIES:
            raise ConfigError(f"{where}: unknown category {category!r}")
        use = row.get("use", "")
        if use not in USES:
            raise ConfigError(f"{where}: use must be one of {', '.join(USES)}, got {use!r}")
        for text in [*row.get("templates", []), row.get("partial", ""), row.get("let_down", "")]:
            for slot in SLOT.findall(text):
                if slot not in slots:
                    raise ConfigError(f"{where}: template slot {{{slot}}} has no list in [slots]")
        lo, hi = row["minutes"]
        if not 1 <= lo <= hi:
            raise ConfigError(f"{where}: minutes must be [shortest, longest] with 1 <= shortest <= longest")
        chance = float(row.get("disappoint", 0.0))
        if not 0.0 <= chance <= 1.0:
            raise ConfigError(f"{where}: disappoint must be a chance from 0 to 1, got {chance}")
        hours = row.get("hours", [0, 30])
        specs[kind] = ActivitySpec(
            kind=kind, label=row["label"], category=category, use=use, minutes=(int(lo), int(hi)),
            hours=(float(hours[0]), float(hours[1])), after_wake_h=float(row.get("after_wake_h", 0.0)),
            before_bed_h=float(row.get("before_bed_h", 0.0)), rate=float(row.get("rate", 1.0)),
            asleep=bool(row.get("asleep", False)), mood=tuple(float(x) for x in row["mood"]),  # type: ignore[arg-type]
            min_energy=float(row.get("min_energy", 0.0)), comfort=bool(row.get("comfort", False)),
            outdoor=bool(row.get("outdoor", False)), daylight=bool(row.get("daylight", False)), out=bool(row.get("out", False)), disappoint=chance,
            place=str(row.get("place", "家")), templates=tuple(row.get("templates", [])),
            let_down=str(row.get("let_down", "")),
            partial=row.get("partial", row["label"]), max_per_day=int(row.get("max_per_day", 99)),
        )
    for needed in _NEEDED:
        if needed not in specs:
            raise ConfigError(f"activities.toml: the catalogue needs an [activity.{needed}] row")
    return specs


@cache
def slot_lists() -> dict[str, list[str]]:
    return {k: list(v) for k, v in _read()["slots"].items()}
