"""What she does next: the activity catalogue, her day plan and the seeded choice of each activity (pure).

Everything random here is drawn from `random.Random` seeded with sha256 of (companion, date, purpose,
instant), so a day replays identically and two companions live different days. Functions take the
time and her state as parameters; the database glue is engine/inner.py.
"""

from __future__ import annotations

import hashlib
import random
import re
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any
from zoneinfo import ZoneInfo

from engine import energy as energy_model
from engine.errors import ConfigError
from engine.persona import CATEGORIES, Persona

HOUR = 3600.0
MINUTE = 60.0
DAY_STARTS_AT_H = 4.0            # her "day" runs 04:00-04:00: a 01:00 bedtime belongs to the evening before
MEALS = ("breakfast", "lunch", "dinner")
ROUTINE_CATEGORIES = ("sleep", "meal", "chat")
WHY_ZH = {"tired": "累了", "hungry": "饿了", "curious": "好奇", "lonely": "有点想人", "routine": "日常",
          "low_mood": "心情低落", "restless": "坐不住", "relax": "放松一下", "sociable": "想热闹", "resume": "接着做",
          "chat": "在和你聊天", "sleepy": "困了"}
_CATEGORY_WHY = {"reading": "curious", "learning": "curious", "creative": "curious", "music": "relax",
                 "outdoor": "restless", "exercise": "restless", "social": "sociable", "domestic": "routine",
                 "screen": "relax", "rest": "relax"}
_SLOT = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class ActivitySpec:
    kind: str
    label: str
    category: str
    minutes: tuple[int, int]
    hours: tuple[float, float]
    rate: float
    asleep: bool
    mood: tuple[float, float, float]
    min_energy: float
    comfort: bool
    templates: tuple[str, ...]
    partial: str
    max_per_day: int


@cache
def catalogue() -> dict[str, ActivitySpec]:
    """The validated activity catalogue (engine/data/activities.toml)."""
    data = tomllib.loads((resources.files("engine") / "data" / "activities.toml").read_text(encoding="utf-8"))
    slots = data["slots"]
    specs = {}
    for kind, row in data["activity"].items():
        where = f"activities.toml [activity.{kind}]"
        category = row["category"]
        if category not in CATEGORIES and category not in ROUTINE_CATEGORIES:
            raise ConfigError(f"{where}: unknown category {category!r}")
        for text in [*row.get("templates", []), row.get("partial", "")]:
            for slot in _SLOT.findall(text):
                if slot not in slots:
                    raise ConfigError(f"{where}: template slot {{{slot}}} has no list in [slots]")
        lo, hi = row["minutes"]
        if not 1 <= lo <= hi:
            raise ConfigError(f"{where}: minutes must be [shortest, longest] with 1 <= shortest <= longest")
        specs[kind] = ActivitySpec(
            kind=kind, label=row["label"], category=category, minutes=(int(lo), int(hi)),
            hours=(float(row["hours"][0]), float(row["hours"][1])), rate=float(row.get("rate", 1.0)),
            asleep=bool(row.get("asleep", False)), mood=tuple(float(x) for x in row["mood"]),  # type: ignore[arg-type]
            min_energy=float(row.get("min_energy", 0.0)), comfort=bool(row.get("comfort", False)),
            templates=tuple(row.get("templates", [])), partial=row.get("partial", row["label"]),
            max_per_day=int(row.get("max_per_day", 99)),
        )
    for needed in ("sleep", "nap", "daydream", "chat", *MEALS):
        if needed not in specs:
            raise ConfigError(f"activities.toml: the catalogue needs an [activity.{needed}] row")
    return specs


@cache
def slot_lists() -> dict[str, list[str]]:
    data = tomllib.loads((resources.files("engine") / "data" / "activities.toml").read_text(encoding="utf-8"))
    return {k: list(v) for k, v in data["slots"].items()}


def rng_for(seed_key: str, *parts: object) -> random.Random:
    """A Random seeded by sha256 of the parts (Python's hash() is salted per process; sha256 is not)."""
    text = "|".join([seed_key, *(str(p) for p in parts)])
    return random.Random(int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big"))


def local_time(t: float, tz: str) -> datetime:
    return datetime.fromtimestamp(t, UTC).astimezone(ZoneInfo(tz))


def local_hour(t: float, tz: str) -> float:
    lt = local_time(t, tz)
    return lt.hour + lt.minute / 60.0 + lt.second / 3600.0


def day_of(t: float, tz: str) -> str:
    """Her day (YYYY-MM-DD): days turn at 04:00 local, so staying up past midnight is still 'yesterday'."""
    return (local_time(t, tz) - timedelta(hours=DAY_STARTS_AT_H)).date().isoformat()


def at_local(day: str, hour: float, tz: str) -> float:
    """The instant of `hour` (may exceed 24) on local day `day`."""
    base = datetime.fromisoformat(day).replace(tzinfo=ZoneInfo(tz))
    return (base + timedelta(hours=hour)).timestamp()


def sleep_window(day: str, persona: Persona, tz: str, half_width_h: float) -> tuple[float, float]:
    """When her main sleep may start on `day`: 23:00 shifted by her chronotype, +- half_width_h."""
    centre = 23.0 + persona.chronotype_shift_h
    return at_local(day, centre - half_width_h, tz), at_local(day, centre + half_width_h, tz)


def make_day_plan(seed_key: str, t: float, state_energy: energy_model.Energy, params: energy_model.EnergyParams,
                  persona: Persona, tz: str, *, woke_at: float | None, half_width_h: float) -> dict[str, Any]:
    """The anchors of her day from `t`: meal times and when the main sleep starts (from process S)."""
    day = day_of(t, tz)
    rng = rng_for(seed_key, day, "plan")
    shift = persona.chronotype_shift_h
    meals: dict[str, float] = {}
    wake = woke_at if woke_at is not None else t
    breakfast = wake + rng.uniform(15, 40) * MINUTE
    lunch = at_local(day, 12.0 + 0.5 * shift + rng.uniform(-0.3, 0.4), tz)
    dinner = at_local(day, 18.5 + 0.5 * shift + rng.uniform(-0.3, 0.6), tz)
    if woke_at is not None and local_hour(breakfast, tz) < 11.0:
        meals["breakfast"] = breakfast
    if lunch > t + 10 * MINUTE:
        meals["lunch"] = lunch
    if dinner > t + 10 * MINUTE:
        meals["dinner"] = dinner
    predicted = energy_model.crossing(state_energy.s, t, params, asleep=False)
    predicted += rng.uniform(-20, 20) * MINUTE
    lo, hi = sleep_window(day, persona, tz, half_width_h)
    sleep_at = min(max(predicted, lo), hi)
    sleep_at = max(sleep_at, t + 30 * MINUTE)
    meals = {k: v for k, v in meals.items() if v < sleep_at - 30 * MINUTE}
    return {"day": day, "wake_at": woke_at, "sleep_at": round(sleep_at, 3),
            "meals": {k: round(v, 3) for k, v in sorted(meals.items(), key=lambda kv: kv[1])},
            "done": [], "naps": 0, "counts": {}}


def next_anchor(plan: dict[str, Any], t: float) -> tuple[str, float]:
    """The next planned anchor (a meal not yet eaten, else the main sleep) and its time."""
    pending = [(v, k) for k, v in plan["meals"].items() if k not in plan["done"]]
    pending.sort()
    if pending:
        when, kind = pending[0]
        return kind, min(when, plan["sleep_at"])
    return "sleep", plan["sleep_at"]


@dataclass(frozen=True)
class Choice:
    kind: str
    why: str
    end: float


def choose(seed_key: str, t: float, plan: dict[str, Any], persona: Persona, *, energy: float, valence: float,
           last_social_at: float | None, previous: str | None, tz: str, tired_energy: float,
           lonely_after_h: float, sleep_end: float | None = None) -> Choice:
    """Her next activity at instant t, its motive and planned end (never past the next anchor)."""
    specs = catalogue()
    anchor, anchor_at = next_anchor(plan, t)
    rng = rng_for(seed_key, plan["day"], "choose", round(t, 3))
    if anchor_at <= t + 60:
        if anchor == "sleep":
            end = sleep_end if sleep_end is not None else t + 8 * HOUR
            return Choice("sleep", "sleepy" if energy < tired_energy else "routine", end)
        lo, hi = specs[anchor].minutes
        nxt = next_anchor({**plan, "done": [*plan["done"], anchor]}, t)[1]
        end = min(t + rng.randint(lo, hi) * MINUTE, max(nxt, t + lo * MINUTE))
        return Choice(anchor, "hungry", end)
    room = anchor_at - t
    hour = local_hour(t, tz)
    # A slump in the day means a nap or a rest; the evening slide toward bed is handled by min_energy
    # (she picks quiet things), not by resting for hours.
    if energy < tired_energy and plan["sleep_at"] - t > 3 * HOUR:
        kind = "nap" if plan["naps"] == 0 and 12.0 <= hour < 17.0 and room >= 25 * MINUTE else "daydream"
        return Choice(kind, "tired", min(anchor_at, t + _draw_minutes(rng, specs[kind]) * MINUTE))
    low_mood = valence < persona.baseline_v - 0.12
    lonely = (last_social_at is None or t - last_social_at > lonely_after_h * HOUR) and persona.sociability > 0.35
    counts = plan.get("counts", {})
    candidates: list[tuple[str, float, str]] = []
    for kind, spec in specs.items():
        if spec.category in ROUTINE_CATEGORIES or kind == "nap" or kind == previous:
            continue
        if spec.minutes[0] * MINUTE > room or energy < spec.min_energy or not _in_hours(hour, spec.hours):
            continue
        done_today = int(counts.get(kind, 0))
        if done_today >= spec.max_per_day:
            continue
        # Variety: each time she already did it today halves its appeal.
        weight = persona.prefs.get(spec.category, 1.0) / (1.0 + done_today)
        why = _CATEGORY_WHY.get(spec.category, "routine")
        if low_mood and spec.comfort:
            weight *= 3.0
            why = "low_mood"
        if lonely and spec.category == "social":
            weight *= 1.0 + 4.0 * persona.sociability
            why = "lonely"
        candidates.append((kind, weight, why))
    if not candidates:
        return Choice("daydream", "relax" if energy >= tired_energy else "tired", anchor_at)
    total = sum(w for _, w, _ in candidates)
    pick = rng.uniform(0, total)
    kind, _, why = candidates[-1]
    for candidate in candidates:
        pick -= candidate[1]
        if pick <= 0:
            kind, _, why = candidate
            break
    end = min(anchor_at, t + _draw_minutes(rng, specs[kind]) * MINUTE)
    if anchor_at - end < 15 * MINUTE:
        end = anchor_at  # no scraps of time before a meal or bed: she just keeps going a little longer
    return Choice(kind, why, end)


def _draw_minutes(rng: random.Random, spec: ActivitySpec) -> int:
    lo, hi = spec.minutes
    return 5 * round(rng.randint(lo, hi) / 5) if hi - lo >= 5 else lo


def _in_hours(hour: float, hours: tuple[float, float]) -> bool:
    lo, hi = hours
    return lo <= hour < hi or lo <= hour + 24.0 < hi


def details_for(seed_key: str, kind: str, started_at: float) -> dict[str, str]:
    """The concrete details (book, dish, friend...) of one activity, fixed when it starts."""
    spec = catalogue()[kind]
    rng = rng_for(seed_key, kind, round(started_at, 3), "details")
    lists = slot_lists()
    template = rng.randrange(len(spec.templates)) if spec.templates else -1
    texts = [spec.templates[template]] if template >= 0 else []
    texts.append(spec.partial)
    details: dict[str, str] = {"template": str(template)}
    for text in texts:
        for slot in _SLOT.findall(text):
            if slot not in details:
                details[slot] = rng.choice(lists[slot])
    return details


def render(text: str, details: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: details.get(m.group(1), m.group(0)), text)


def completion_text(kind: str, details: dict[str, str]) -> str | None:
    spec = catalogue()[kind]
    index = int(details.get("template", "-1"))
    if index < 0 or not spec.templates:
        return None
    return render(spec.templates[index], details)


def resumed_text(kind: str, details: dict[str, str], remaining_s: float) -> str:
    spec = catalogue()[kind]
    minutes = max(1, round(remaining_s / 60))
    return f"{render(spec.partial, details)}的时候你来找我聊天，聊完又接着{spec.label}，还剩大概{minutes}分钟。"


def abandoned_text(kind: str, details: dict[str, str]) -> str:
    spec = catalogue()[kind]
    return f"{render(spec.partial, details)}的时候你来找我聊天，聊完已经过了时候，{spec.label}就先放下了。"
