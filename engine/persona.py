"""Persona from the BaZi chart: the documented mapping in engine/data/persona.toml, applied deterministically.

The mapping is a cultural persona device (see the data file's header): element shares and day-master
strength become her mood baselines, half-life factors, sensitivity to bad events (stored under its old
name loss_aversion; engine/mood.py maps it to a valence weight), chronotype, sociability and activity
preferences, each clamped into documented bounds.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from engine.bazi import BRANCH_ELEMENT, ELEMENTS, STEM_ELEMENT
from engine.errors import ConfigError
from engine.mood import MoodParams

SCALARS = ("baseline_v", "baseline_a", "baseline_d", "half_life_factor_v", "half_life_factor_a",
           "half_life_factor_d", "loss_aversion", "chronotype_shift_h", "sociability")
CATEGORIES = ("rest", "reading", "creative", "music", "outdoor", "exercise", "social", "domestic",
              "learning", "screen")
# 生: the element that generates each element (its 印 resource).
GENERATED_BY = {"木": "水", "火": "木", "土": "火", "金": "土", "水": "金"}


@dataclass(frozen=True)
class Persona:
    baseline_v: float = 0.10
    baseline_a: float = 0.0
    baseline_d: float = 0.05
    half_life_factor_v: float = 1.0
    half_life_factor_a: float = 1.0
    half_life_factor_d: float = 1.0
    loss_aversion: float = 2.0
    chronotype_shift_h: float = 0.0
    sociability: float = 0.5
    prefs: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 1.0))
    shares: dict[str, float] = field(default_factory=lambda: dict.fromkeys(ELEMENTS, 0.2))
    strength: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> Persona:
        """Rebuild from to_dict() output; missing keys take the neutral defaults (older rows)."""
        raw = raw or {}
        default = cls()
        values: dict[str, Any] = {k: float(raw.get(k, getattr(default, k))) for k in SCALARS}
        values["prefs"] = {c: float(raw.get("prefs", {}).get(c, 1.0)) for c in CATEGORIES}
        values["shares"] = {e: float(raw.get("shares", {}).get(e, 0.2)) for e in ELEMENTS}
        values["strength"] = float(raw.get("strength", 0.0))
        return cls(**values)


@cache
def mapping() -> dict[str, Any]:
    """The validated persona mapping (engine/data/persona.toml)."""
    text = (resources.files("engine") / "data" / "persona.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    allowed_row = set(SCALARS) | {"trait", "prefs"}
    rows = [("base", data["base"]), ("strength", data["strength"])]
    rows += [(f"element.{k}", v) for k, v in data["element"].items()]
    rows += [(f"day_master.{k}", v) for k, v in data["day_master"].items()]
    for where, row in rows:
        unknown = set(row) - allowed_row
        if unknown:
            raise ConfigError(f"persona.toml [{where}]: unknown keys {sorted(unknown)}; allowed {sorted(allowed_row)}")
        if where != "base" and "trait" not in row:
            raise ConfigError(f"persona.toml [{where}]: every row must say which trait it encodes (trait = ...)")
        for cat in row.get("prefs", {}):
            if cat not in CATEGORIES:
                raise ConfigError(f"persona.toml [{where}] prefs: unknown category {cat!r}; known {CATEGORIES}")
    if set(data["element"]) != set(ELEMENTS) or len(data["day_master"]) != 10:
        raise ConfigError("persona.toml needs one [element.X] row per element and one [day_master.X] per stem")
    return data


def element_shares(chart: dict[str, Any]) -> dict[str, float]:
    """Five-element shares: stems count 1; each branch counts 1 split over its hidden stems."""
    weights = mapping()["shares"]["hidden_stem_weights"]
    units = dict.fromkeys(ELEMENTS, 0.0)
    for pillar in ("year", "month", "day", "time"):
        stem, branch = chart["pillars"][pillar][0], chart["pillars"][pillar][1]
        units[STEM_ELEMENT[stem]] += 1.0
        hidden = chart.get("hidden_stems", {}).get(pillar) or []
        if not hidden:
            units[BRANCH_ELEMENT[branch]] += 1.0
            continue
        w = weights[: len(hidden)]
        for hs, wi in zip(hidden, w, strict=False):
            units[STEM_ELEMENT[hs]] += wi / sum(w)
    total = sum(units.values())
    return {e: round(units[e] / total, 6) for e in ELEMENTS}


def day_master_strength(chart: dict[str, Any], shares: dict[str, float]) -> float:
    """-1 (weak) .. +1 (strong): own element plus its resource, against the even 0.4."""
    own = chart["day_master_element"]
    support = shares[own] + shares[GENERATED_BY[own]]
    return round(max(-1.0, min(1.0, (support - 0.4) / 0.4)), 6)


def persona_from_chart(chart: dict[str, Any]) -> Persona:
    """Apply the mapping to a compute_chart() dict; deterministic and bounded."""
    data = mapping()
    shares = element_shares(chart)
    strength = day_master_strength(chart, shares)
    out = {k: float(data["base"][k]) for k in SCALARS}
    prefs = {c: float(data["base"]["prefs"].get(c, 1.0)) for c in CATEGORIES}
    contributions: list[tuple[dict[str, Any], float]] = [
        (data["element"][e], (shares[e] - 0.2) / 0.1) for e in ELEMENTS
    ]
    contributions.append((data["strength"], strength))
    contributions.append((data["day_master"][chart["day_master"]], 1.0))
    for row, weight in contributions:
        for k in SCALARS:
            out[k] += float(row.get(k, 0.0)) * weight
        for c, coef in row.get("prefs", {}).items():
            prefs[c] += float(coef) * weight
    bounds = data["bounds"]
    clamped = {k: round(_clamp(v, bounds[k]), 6) for k, v in out.items()}
    pref_bounds = bounds["prefs"]
    return Persona(**clamped, prefs={c: round(_clamp(v, pref_bounds), 6) for c, v in prefs.items()},
                   shares=shares, strength=strength)


def _clamp(value: float, bound: list[float]) -> float:
    return max(float(bound[0]), min(float(bound[1]), value))


_ZH_CATEGORY = {"rest": "休息", "reading": "读书", "creative": "画画写东西", "music": "音乐", "outdoor": "出门走走",
                "exercise": "运动", "social": "和朋友联系", "domestic": "做家务下厨", "learning": "学新东西",
                "screen": "看剧"}


def describe_persona(chart: dict[str, Any], persona: Persona) -> dict[str, Any]:
    """Her persona in plain Chinese, for operators and persona designers."""
    data = mapping()
    dm = chart["day_master"]
    top = sorted(ELEMENTS, key=lambda e: (-persona.shares[e], ELEMENTS.index(e)))
    strong = "偏强" if persona.strength > 0.25 else "偏弱" if persona.strength < -0.25 else "中和"
    shift = persona.chronotype_shift_h
    rhythm = ("早睡早起型" if shift < -0.3 else "夜猫子型" if shift > 0.3 else "作息规律型")
    sleep_at = 23.0 + shift
    favourite = sorted(CATEGORIES, key=lambda c: (-persona.prefs[c], CATEGORIES.index(c)))[:3]
    mood = "偏开朗" if persona.baseline_v > 0.15 else "偏安静" if persona.baseline_v < 0.05 else "平和"
    return {
        "日主": f"{dm}{chart['day_master_element']}（{data['day_master'][dm]['trait']}）",
        "四柱": " ".join(chart["pillars"][p] for p in ("year", "month", "day", "time")),
        "五行": "、".join(f"{e}{persona.shares[e] * 100:.0f}%" for e in ELEMENTS),
        "主导五行": f"{top[0]}、{top[1]}",
        "日主强弱": strong,
        "性情": f"心情基调{mood}，{'外向爱热闹' if persona.sociability > 0.55 else '喜欢独处' if persona.sociability < 0.45 else '内外平衡'}",
        "负面情绪": f"坏事的分量是好事的 {_bad_weight(persona):.2f} 倍（1.5 淡然 ~ 2.0 敏感）",
        "作息": f"{rhythm}，一般 {int(sleep_at) % 24:02d}:{int(round((sleep_at % 1) * 60)) % 60:02d} 前后入睡",
        "喜欢": "、".join(_ZH_CATEGORY[c] for c in favourite),
        "说明": "这是借用五行文化词汇的人设工具，不是对真人的判断。",
    }


def _bad_weight(persona: Persona) -> float:
    return MoodParams(loss_aversion=persona.loss_aversion).valence_negative_weight


def persona_of_companion(companion: dict[str, Any] | None) -> Persona | None:
    """Her Persona from the companion row: the stored mapping, or the chart's when none was stored.

    Every reader (the daemon's parts, the API, the CLI) goes through here, so all of them step and
    describe the same person.
    """
    if not companion:
        return None
    if companion.get("persona"):
        return Persona.from_dict(companion["persona"])
    return persona_from_chart(companion["chart"])
