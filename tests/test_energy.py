"""Energy (Borbély two-process model): the published equations, and a default rhythm of ~23:00-07:00."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from engine import energy as en

P = en.EnergyParams()
MIDNIGHT = 20 * 86400.0 - 8 * 3600.0   # a local (UTC+8) midnight


def test_s_rises_awake_and_falls_asleep_with_the_published_time_constants() -> None:
    h = 3600.0
    assert math.isclose(en.step_s(0.2, 18.2 * h, False, P), 1 - 0.8 * math.exp(-1), rel_tol=1e-12)
    assert math.isclose(en.step_s(0.6, 4.2 * h, True, P), 0.6 * math.exp(-1), rel_tol=1e-12)


def test_thresholds_follow_the_circadian_harmonic_sum() -> None:
    for k in range(48):
        t = MIDNIGHT + k * 1800
        c = en.circadian(t, P)
        h_plus, h_minus = en.thresholds(t, P)
        assert math.isclose(h_plus, 0.67 + 0.12 * c) and math.isclose(h_minus, 0.17 + 0.12 * c)
        assert abs(c) <= sum(en.HARMONICS)
    # period 24 h
    assert math.isclose(en.circadian(MIDNIGHT + 5 * 3600, P), en.circadian(MIDNIGHT + 29 * 3600, P), abs_tol=1e-12)


@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=1.0, max_value=86400.0),
       st.integers(min_value=2, max_value=200), st.booleans())
def test_one_step_equals_many_small_steps(s: float, gap: float, n: int, asleep: bool) -> None:
    e0 = en.Energy(s=s, asleep=asleep, woke_at=None, at=0.0)
    one = en.step(e0, gap, P, asleep=asleep)
    many = e0
    for i in range(1, n + 1):
        many = en.step(many, gap * i / n, P, asleep=asleep)
    assert abs(one.s - many.s) < 1e-12


@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=2 * 86400.0), st.booleans())
def test_level_stays_in_unit_range(s: float, t: float, asleep: bool) -> None:
    assert 0.0 <= en.level(en.Energy(s=s, asleep=asleep, woke_at=0.0, at=t), P) <= 1.0


def _rhythm(params: en.EnergyParams) -> tuple[float, float]:
    state = en.spin_up(MIDNIGHT + 12 * 3600, params, days=5)
    onset = en.crossing(state.s, state.at, params, asleep=False)
    asleep = en.free_run(state, onset + 1, params)
    wake = en.crossing(asleep.s, asleep.at, params, asleep=True)
    return en.local_hour(onset, params), en.local_hour(wake, params)


def test_default_parameters_sleep_near_23_and_wake_near_7() -> None:
    onset, wake = _rhythm(P)
    assert 22.5 <= onset <= 23.5
    assert 6.5 <= wake <= 7.5


def test_chronotype_shifts_the_rhythm() -> None:
    early, _ = _rhythm(en.EnergyParams(chronotype_shift_h=-1.0))
    late, _ = _rhythm(en.EnergyParams(chronotype_shift_h=1.0))
    assert late - early > 1.0


def test_energy_lowest_before_sleep_and_highest_late_morning() -> None:
    state = en.spin_up(MIDNIGHT + 5 * 3600, P, days=5)   # 05:00, still asleep
    samples = []
    t = state.at
    while t < MIDNIGHT + 24 * 3600:
        t += 300
        state = en.free_run(state, t, P)
        if not state.asleep:
            samples.append((en.level(state, P), en.local_hour(t, P)))
    low = min(samples)
    high = max(samples)
    assert low[1] >= 21.5
    assert 9.0 <= high[1] <= 12.5


def test_activity_cost_tires_faster() -> None:
    assert en.step_s(0.3, 3600, False, P, rate=1.6) > en.step_s(0.3, 3600, False, P, rate=1.0)
