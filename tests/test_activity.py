"""The activity catalogue and her choices: valid data, seeded reproducibility, energy and mood steering."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

from engine import activity as act
from engine.life.place import city
from engine.life.state import world_of
from engine.persona import CATEGORIES, Persona

TZ = "Asia/Shanghai"
DAY = "2025-03-04"
PERSONA = Persona()


def at(hour: float) -> float:
    return act.at_local(DAY, hour, TZ)


def plan(**over) -> dict:
    base = {"day": DAY, "shape": "off", "wake_at": at(7), "sleep_at": at(23),
            "anchors": [["lunch", "lunch", at(12), None, "家"], ["dinner", "dinner", at(18.5), None, "家"]],
            "done": [], "naps": 0, "nap": False, "counts": {}}
    return {**base, **over}


def pick(t: float, p: dict, *, energy: float = 0.7, valence: float = 0.1, key: str = "k", previous=None):
    world = world_of(dt.date.fromisoformat(p["day"]), city("杭州"), key)
    return act.choose(act.Situation(
        seed_key=key, t=t, plan=p, persona=PERSONA, world=world, energy=energy,
        mood_dev=(valence - PERSONA.baseline_v, 0.0), last_social_at=t, previous=previous, tz=TZ, tired_energy=0.2,
        lonely_after_h=6.0, needs=frozenset(), friends_due=(), family_due=()))


def test_catalogue_is_valid_and_chinese() -> None:
    specs = act.catalogue()
    assert len(specs) >= 30
    for kind, spec in specs.items():
        assert spec.category in CATEGORIES or spec.category in act.ROUTINE_CATEGORIES, kind
        assert any("\u4e00" <= ch <= "\u9fff" for ch in spec.label), kind
        if kind != "chat":
            assert spec.templates, kind


def test_same_inputs_same_choice_and_different_days_differ() -> None:
    choices = [pick(at(9) + i * 977, plan()) for i in range(40)]
    assert choices == [pick(at(9) + i * 977, plan()) for i in range(40)]
    other = [pick(at(9) + i * 977, plan(day="2025-03-05")) for i in range(40)]
    assert choices != other


def test_choices_never_run_past_the_next_anchor() -> None:
    for i in range(200):
        t = at(8) + i * 613
        p = plan()
        choice = pick(t, p)
        assert choice.end <= act.next_anchor(p, t).at or choice.kind in act.MEALS or choice.kind == "sleep"
        assert choice.end > t


def test_meal_time_makes_her_hungry_and_bedtime_sleepy() -> None:
    lunch = pick(at(12), plan())
    assert (lunch.kind, lunch.why) == ("lunch", "hungry")
    bed = pick(at(23), plan(done=["lunch", "dinner"]), energy=0.05)
    assert bed.kind == "sleep"


def test_low_energy_in_the_afternoon_means_a_nap_or_a_rest() -> None:
    tired = pick(at(14), plan(done=["lunch"]), energy=0.1)
    assert tired.kind == "nap" and tired.why == "tired"
    again = pick(at(15), plan(done=["lunch"], naps=1), energy=0.1)
    assert again.kind == "daydream" and again.why == "tired"


def test_low_mood_turns_her_to_comfort_activities() -> None:
    specs = act.catalogue()
    times = [at(8) + (i * 331) % (3 * 3600) for i in range(300)]   # mornings, before the lunch anchor
    low = Counter(specs[pick(t, plan(), valence=-0.5).kind].comfort for t in times)
    normal = Counter(specs[pick(t, plan(), valence=0.2).kind].comfort for t in times)
    assert low[True] / 300 > normal[True] / 300 + 0.15
    whys = Counter(pick(t, plan(), valence=-0.5).why for t in times)
    assert whys["low_mood"] > 0


def test_low_energy_rules_out_demanding_activities() -> None:
    specs = act.catalogue()
    for i in range(200):
        choice = pick(at(20) + i * 37, plan(done=["lunch", "dinner"]), energy=0.22)
        assert specs[choice.kind].min_energy <= 0.22


def test_details_are_reproducible_and_fill_every_slot() -> None:
    t = datetime(2025, 3, 4, 10, 0, tzinfo=ZoneInfo(TZ)).timestamp()
    for kind in act.catalogue():
        details = act.details_for("k", kind, t)
        assert details == act.details_for("k", kind, t)
        text = act.completion_text(kind, details)
        if text is not None:
            assert "{" not in text
        assert "{" not in act.resumed_text(kind, details, 600) and "{" not in act.abandoned_text(kind, details)


def test_her_day_turns_at_four_in_the_morning() -> None:
    assert act.day_of(at(25.5), TZ) == DAY       # 01:30 the next morning still belongs to DAY
    assert act.day_of(at(28.5), TZ) != DAY
