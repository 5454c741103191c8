"""Bad days on her own: a seeded day-to-day valence tone and short nights, with no chat at all (issue 12)."""

from __future__ import annotations

import datetime as dt
import statistics

import pytest

from engine import mood as m

START = dt.date(2027, 1, 4)   # a Monday in January, as the realism bench starts
# The valence baselines of the three charts the benches use (1998-04-12 09:30, 1990-08-15 08:30, 2001-12-03 22:10).
CHART_BASELINES = {"xiaoan|1998": 0.1175, "xiaoan|1990": 0.03, "xiaoan|2001": 0.0967}


def quiet_day_means(seed: str, p: m.MoodParams, days: int, slept_h: float = 8.0) -> list[float]:
    """Mean shown valence 07:00-23:00 of each quiet day: the tone set at waking, nothing else happening."""
    mood = m.at_baseline(0.0)
    means = []
    for d in range(-10, days):                       # ten days of run-in so day 0 starts in her rhythm
        wake = (d + 10) * 86400.0 + 7 * 3600.0
        tone = m.waking_tone(seed, START + dt.timedelta(days=d), slept_h, p)
        mood = m.set_tone(m.relax(mood, wake, p), tone)
        hourly = [m.values(m.relax(mood, wake + h * 3600.0, p), p)[0] for h in range(17)]
        mood = m.relax(mood, wake + 16 * 3600.0, p)
        if d >= 0:
            means.append(sum(hourly) / len(hourly))
    return means


def test_day_tone_is_fixed_by_seed_and_date() -> None:
    p = m.MoodParams()
    day = dt.date(2027, 3, 1)
    assert m.day_tone("a", day, p) == m.day_tone("a", day, p)
    assert m.day_tone("a", day, p) != m.day_tone("b", day, p)
    assert m.day_tone("a", day, p) != m.day_tone("a", day + dt.timedelta(days=1), p)
    assert m.day_tone("a", day, m.MoodParams(tone_sd=0.0)) == 0.0


def test_day_tone_has_zero_mean_the_set_spread_and_carries_over_days() -> None:
    p = m.MoodParams(tone_sd=0.1, tone_persistence=0.6)
    tones = [m.day_tone("long run", START + dt.timedelta(days=i), p) for i in range(2000)]
    assert abs(statistics.fmean(tones)) < 0.014               # 3 standard errors of an AR(1) mean over 2000 days
    assert statistics.pstdev(tones) == pytest.approx(0.1, rel=0.1)
    lag1 = statistics.correlation(tones[:-1], tones[1:])
    assert 0.5 < lag1 < 0.7                                   # a bad day tends to be followed by a so-so one


@pytest.mark.parametrize(("seed", "baseline"), sorted(CHART_BASELINES.items()))
def test_with_no_chat_some_days_are_bad_and_the_long_run_mean_is_her_baseline(seed: str, baseline: float) -> None:
    p = m.MoodParams(baseline=(baseline, 0.0, 0.05))
    means = quiet_day_means(seed, p, 120)
    below = sum(x < 0 for x in means) / len(means)
    assert below >= 0.03
    assert max(means) - min(means) > 0.2                      # not one flat day after another
    long_run = quiet_day_means(seed, p, 1000)
    assert statistics.fmean(long_run) == pytest.approx(baseline, abs=0.015)


def test_a_short_night_lowers_the_next_day_and_a_normal_one_costs_nothing() -> None:
    p = m.MoodParams()
    assert m.sleep_tone(8.0, p) == 0.0 and m.sleep_tone(7.5, p) == 0.0
    assert m.sleep_tone(5.5, p) == pytest.approx(-0.08)
    assert m.sleep_tone(0.0, p) == p.sleep_tone_floor
    rested = quiet_day_means("night", p, 30)
    short = quiet_day_means("night", p, 30, slept_h=5.0)
    assert all(s < r - 0.05 for s, r in zip(short, rested, strict=True))


def test_the_waking_tone_is_the_day_tone_plus_the_nights_cost() -> None:
    p = m.MoodParams()
    day = dt.date(2027, 2, 9)
    assert m.waking_tone("w", day, None, p) == m.day_tone("w", day, p)
    assert m.waking_tone("w", day, 5.5, p) == m.day_tone("w", day, p) + m.sleep_tone(5.5, p)
