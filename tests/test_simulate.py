"""A simulated fortnight (issue 3 acceptance 2): sleep, meals, continuity, energy shape, reproducibility, persona."""

from __future__ import annotations

import json
import time
from functools import cache

from daemon.cli.cmd_simulate import parse_start, simulate
from engine import activity as act
from engine.bazi import compute_chart
from engine.life.plan import LATER_BEFORE_REST_H, MOOD_LATER_MAX_H
from engine.persona import persona_from_chart
from engine.settings import Settings

S = Settings()
START = parse_start("2025-01-06T04:00", S.life.tz)
BIRTH_A = ("1990-08-15 08:30", "Asia/Shanghai", 2)
BIRTH_B = ("1985-12-01 22:10", "Asia/Shanghai", 2)


@cache
def run(birth: tuple[str, str, int], days: int = 14) -> str:
    return json.dumps(simulate(S, days=days, start=START, birth=birth, name="小安"), ensure_ascii=False,
                      sort_keys=True)


def test_fourteen_days_run_in_under_ten_seconds() -> None:
    began = time.perf_counter()
    report = simulate(S, days=14, start=START, birth=BIRTH_A, name="小安")
    assert time.perf_counter() - began < 10.0
    assert len(report["daily"]) == 14


def test_every_day_has_one_main_sleep_of_6_to_10_hours_in_the_chronotype_window() -> None:
    report = json.loads(run(BIRTH_A))
    persona = persona_from_chart(compute_chart(*BIRTH_A))
    for day in report["daily"]:
        assert day["sleeps"] == 1, day["day"]      # one main sleep starting that day (no second night)
        assert 6.0 <= day["sleep_h"] <= 10.0, day
        # Bedtime may move later before a rest day and after an aroused or low day (engine/life/plan.py).
        lo, _ = act.sleep_window(day["day"], persona, S.life.tz, S.life.sleep_window_h)
        _, hi = act.sleep_window(day["day"], persona, S.life.tz, S.life.sleep_window_h,
                                 later_h=LATER_BEFORE_REST_H + MOOD_LATER_MAX_H)
        assert lo <= day["main_sleep_t0"] <= hi, day


def test_every_day_has_its_meals() -> None:
    days = json.loads(run(BIRTH_A))["daily"]
    for day in days:
        # a workday breakfast is skipped now and then on a late morning (issue 24 item 5)
        assert day["meals"] in (["breakfast", "lunch", "dinner"], ["lunch", "dinner"]), day
    assert sum(1 for day in days if "breakfast" not in day["meals"]) <= len(days) // 4


def test_activities_neither_overlap_nor_leave_gaps() -> None:
    timeline = json.loads(run(BIRTH_A))["timeline"]
    assert timeline
    for before, after in zip(timeline, timeline[1:], strict=False):
        assert after["t0"] == before["t1"], (before, after)
        assert before["t1"] > before["t0"]


def test_energy_is_lowest_before_sleep_and_highest_in_the_morning() -> None:
    for day in json.loads(run(BIRTH_A))["daily"]:
        assert day["main_sleep_t0"] - day["energy_min_ts"] <= 2 * 3600, day
        hour = int(day["energy_max_at"][:2]) + int(day["energy_max_at"][3:]) / 60
        # after sleep inertia, before the post-lunch dip (three-process model); on a day she napped, the evening
        # wake-maintenance zone after the nap may top the morning (the tree before issue 24 did so on 6 of 120
        # chart-days, all nap days, peak 17:15-17:55), never later than 19:00
        latest = 19.0 if day["minutes"].get("nap") else 12.5
        assert 8.0 <= hour <= latest, day


def test_two_runs_are_byte_identical() -> None:
    first = run(BIRTH_A, days=3)
    second = json.dumps(simulate(S, days=3, start=START, birth=BIRTH_A, name="小安"), ensure_ascii=False,
                        sort_keys=True)
    assert first == second


def test_two_charts_live_measurably_different_days() -> None:
    a, b = json.loads(run(BIRTH_A)), json.loads(run(BIRTH_B))

    def mean_sleep(report: dict) -> float:
        return sum(d["main_sleep_t0"] % 86400 for d in report["daily"]) / len(report["daily"])

    def mix(report: dict) -> dict[str, int]:
        total: dict[str, int] = {}
        for d in report["daily"]:
            for kind, minutes in d["minutes"].items():
                if kind not in ("sleep", *act.MEALS):   # what she chooses to do with her waking hours
                    total[kind] = total.get(kind, 0) + minutes
        return total

    assert abs(mean_sleep(a) - mean_sleep(b)) > 15 * 60      # sleep times differ by more than 15 min on average
    ma, mb = mix(a), mix(b)
    kinds = set(ma) | set(mb)
    total_a, total_b = sum(ma.values()), sum(mb.values())
    distance = sum(abs(ma.get(k, 0) / total_a - mb.get(k, 0) / total_b) for k in kinds) / 2
    assert distance > 0.06                                     # activity mix: total variation distance


def test_life_events_are_concrete_chinese_and_untold() -> None:
    report = json.loads(run(BIRTH_A, days=3))
    texts = [e["text"] for e in report["life_events"]]
    assert len(texts) > 20
    assert all("{" not in t for t in texts)
    assert any("《" in t for t in texts)


def test_her_life_does_not_depend_on_the_simulation_beat() -> None:
    """Transitions happen at their exact ends and mood and energy are closed-form: the beat only samples the trace."""
    fine = simulate(S, days=3, start=START, birth=BIRTH_A, name="小安", step_s=300.0)
    coarse = simulate(S, days=3, start=START, birth=BIRTH_A, name="小安", step_s=3600.0)
    assert fine["timeline"] == coarse["timeline"]
    assert fine["life_events"] == coarse["life_events"]
    assert [d["sleep_start"] for d in fine["daily"]] == [d["sleep_start"] for d in coarse["daily"]]


def test_a_long_run_says_how_far_it_is() -> None:
    """Issue 25: `simulate --days 366` said nothing for 30 s. Progress comes a day at a time, throttled."""
    import io

    from daemon.cli.cmd_simulate import day_progress

    seen: list[tuple[int, int]] = []
    simulate(S, days=3, start=START, birth=BIRTH_A, name="小安", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1][0] == seen[-1][1] >= 3 and [d for d, _ in seen] == sorted(d for d, _ in seen)
    ticks = iter([0.0, 0.5, 1.2, 1.3, 2.5, 2.6])
    out = io.StringIO()
    show = day_progress(out, every_s=1.0, clock=lambda: next(ticks))
    for done in (1, 2, 3, 4, 5):
        show(done, 5)
    assert out.getvalue().splitlines() == ["simulated 2/5 days", "simulated 4/5 days", "simulated 5/5 days"]
