"""Persona from the chart: documented, deterministic, bounded, and distinct charts give distinct people."""

from __future__ import annotations

import json
import tomllib
from datetime import datetime, timedelta
from importlib import resources

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.bazi import compute_chart
from engine.persona import SCALARS, Persona, describe_persona, mapping, persona_from_chart


def _chart(birth: str) -> dict:
    return compute_chart(birth, "Asia/Shanghai")


def test_mapping_file_says_it_is_a_cultural_persona_device_and_every_row_names_its_trait() -> None:
    text = (resources.files("engine") / "data" / "persona.toml").read_text(encoding="utf-8")
    assert "CULTURAL PERSONA DEVICE" in text
    data = tomllib.loads(text)
    for element, row in data["element"].items():
        assert row["trait"].strip(), element
    for stem, row in data["day_master"].items():
        assert row["trait"].strip(), stem
    assert data["strength"]["trait"].strip()
    assert mapping() is mapping()  # loaded and validated once


@settings(max_examples=60, deadline=None)
@given(st.datetimes(min_value=datetime(1940, 1, 1), max_value=datetime(2030, 12, 31)))
def test_outputs_stay_within_documented_bounds(when: datetime) -> None:
    persona = persona_from_chart(_chart(when.strftime("%Y-%m-%d %H:%M")))
    bounds = mapping()["bounds"]
    for key in SCALARS:
        lo, hi = bounds[key]
        assert lo <= getattr(persona, key) <= hi, key
    assert 1.5 <= persona.loss_aversion <= 2.5
    assert -1.0 <= persona.chronotype_shift_h <= 1.0
    assert all(bounds["prefs"][0] <= w <= bounds["prefs"][1] for w in persona.prefs.values())
    assert abs(sum(persona.shares.values()) - 1.0) < 1e-4


def test_deterministic_and_round_trips_through_json() -> None:
    chart = _chart("1990-08-15 08:30")
    a, b = persona_from_chart(chart), persona_from_chart(json.loads(json.dumps(chart)))
    assert a == b
    assert Persona.from_dict(json.loads(json.dumps(a.to_dict()))) == a


def test_distinct_charts_give_visibly_distinct_people() -> None:
    wood = persona_from_chart(_chart("1985-12-01 22:10"))   # 木-heavy, strong day master
    earth = persona_from_chart(_chart("1998-04-12 09:30"))  # 土-heavy
    differences = sum(abs(getattr(wood, k) - getattr(earth, k)) > 0.02 for k in SCALARS)
    assert differences >= 4
    assert abs(wood.chronotype_shift_h - earth.chronotype_shift_h) >= 0.5
    top_wood = max(wood.prefs, key=wood.prefs.__getitem__)
    top_earth = max(earth.prefs, key=earth.prefs.__getitem__)
    assert top_wood != top_earth


def test_a_spread_of_births_gives_a_spread_of_personas() -> None:
    start = datetime(1990, 1, 1, 8, 0)
    shifts = {round(persona_from_chart(_chart((start + timedelta(days=37 * i, hours=5 * i)).strftime("%Y-%m-%d %H:%M")))
                    .chronotype_shift_h, 1) for i in range(30)}
    assert len(shifts) >= 6


def test_describe_persona_is_plain_chinese() -> None:
    chart = _chart("1990-08-15 08:30")
    text = describe_persona(chart, persona_from_chart(chart))
    assert text["四柱"] == "庚午 甲申 壬子 甲辰"
    assert text["日主"].startswith("壬水")
    assert "人设" in text["说明"]
