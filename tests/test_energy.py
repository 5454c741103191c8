"""Energy: Borbély's S and C (published equations, a default rhythm of ~23:00-07:00) and the TPM felt-energy curve."""

from __future__ import annotations

import math

import pytest
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


def _ordinary_day(params: en.EnergyParams = P) -> dict[float, float]:
    """Felt energy every 30 min of an ordinary awake day (free rhythm, five days of spin-up), by local hour."""
    state = en.spin_up(MIDNIGHT + 5 * 3600, params, days=5)   # 05:00, still asleep
    out = {}
    t = state.at
    while t < MIDNIGHT + 24 * 3600:
        t += 1800
        state = en.free_run(state, t, params)
        if not state.asleep:
            out[round(en.local_hour(t, params), 1)] = en.level(state, params)
    return out


def test_felt_energy_has_a_post_lunch_dip_and_holds_up_in_the_evening() -> None:
    day = _ordinary_day()
    morning_peak = max(day, key=lambda h: day[h] if h < 12 else -1)
    assert 8.0 <= morning_peak <= 11.0
    dip = min(day, key=lambda h: day[h] if 12 <= h <= 17 else 9)
    assert 13.0 <= dip <= 15.5
    assert day[dip] < day[11.0] - 0.05 and day[dip] < day[18.5] - 0.04     # a dip, then a second wind
    # the wake-maintenance zone: no linear slide from 09:00 to ~0.1 at 21:00 (issue 12)
    assert day[20.0] > day[dip] - 0.02 and day[21.0] >= 0.45
    assert day[22.5] < day[21.0] - 0.15                                     # then it falls toward bed
    evening = [day[h] for h in sorted(day) if h >= 19.0]
    assert all(b < a for a, b in zip(evening, evening[1:], strict=False))


def test_the_curve_moves_with_the_chronotype() -> None:
    late = en.EnergyParams(chronotype_shift_h=1.0)
    day_p, day_late = _ordinary_day(), _ordinary_day(late)
    dip_p = min((h for h in day_p if 12 <= h <= 17), key=day_p.__getitem__)
    dip_late = min((h for h in day_late if 12 <= h <= 18), key=day_late.__getitem__)
    assert dip_late - dip_p == pytest.approx(1.0, abs=0.5)


def test_level_is_continuous_across_sleep_onset_and_inertia_comes_on_waking() -> None:
    awake = en.spin_up(MIDNIGHT + 22 * 3600, P, days=5)
    assert not awake.asleep
    asleep = en.step(awake, awake.at + 1.0, P, asleep=True)
    assert abs(en.level(asleep, P) - en.level(awake, P)) < 0.001            # no 0.35 step down
    woken = en.step(en.step(asleep, asleep.at + 8 * 3600, P, asleep=True), asleep.at + 8 * 3600 + 1, P,
                    asleep=False)
    before = en.level(en.step(asleep, asleep.at + 8 * 3600, P, asleep=True), P)
    assert en.level(woken, P) < before - 0.3                                # groggy right after waking
    assert en.inertia(woken, woken.at + 3 * 3600) < 0.01                    # and over it within a few hours


def _night_from(awake_until: float) -> tuple[en.Energy, float]:
    """Awake from an ordinary 07:00 waking until `awake_until`, then asleep to the H- crossing: (woken, hours slept)."""
    state = en.free_run(en.spin_up(MIDNIGHT + 12 * 3600, P, days=5), MIDNIGHT + 12 * 3600, P)
    state = en.step(state, awake_until, P, asleep=False)
    slept = en.sleep_length_h(state, P)
    wake = awake_until + slept * 3600
    asleep = en.step(state, wake, P, asleep=True)
    return en.step(asleep, wake + 1, P, asleep=False), slept


def test_a_late_night_gives_a_shorter_later_sleep_and_a_lower_next_day() -> None:
    usual, usual_h = _night_from(MIDNIGHT + 23 * 3600)
    late, late_h = _night_from(MIDNIGHT + 27 * 3600)                        # chatting until 03:00
    assert 7.5 <= usual_h <= 8.5
    assert late_h < usual_h - 1.5                                           # she does not sleep the debt off
    assert late.at > usual.at + 1800                                        # and wakes later
    assert late.s > usual.s + 0.03                                          # S carries over
    for hour in (11, 15, 19):
        t = MIDNIGHT + (24 + hour) * 3600
        a = en.level(en.step(usual, t, P, asleep=False), P)
        b = en.level(en.step(late, t, P, asleep=False), P)
        assert b < a - 0.05


def test_sleep_length_varies_with_the_hour_she_goes_to_bed() -> None:
    lengths = [_night_from(MIDNIGHT + h * 3600)[1] for h in (22.0, 23.0, 24.0, 25.0)]
    assert all(b < a for a, b in zip(lengths, lengths[1:], strict=False))
    assert lengths[0] - lengths[-1] > 1.5


def test_naps_are_occasional_on_ordinary_days_and_likelier_after_a_short_night() -> None:
    usual, _ = _night_from(MIDNIGHT + 23 * 3600)
    late, _ = _night_from(MIDNIGHT + 27 * 3600)
    afternoon = MIDNIGHT + (24 + 14.5) * 3600
    ordinary = en.nap_chance(en.step(usual, afternoon, P, asleep=False), P)
    tired = en.nap_chance(en.step(late, afternoon, P, asleep=False), P)
    assert 0.04 <= ordinary <= 0.15
    assert tired > 2 * ordinary and tired <= 0.6
    morning = en.step(usual, MIDNIGHT + (24 + 10) * 3600, P, asleep=False)
    assert en.nap_chance(morning, P) == 0.0                                 # only in the early-afternoon window
    assert en.nap_chance(en.step(morning, afternoon, P, asleep=True), P) == 0.0


def test_activity_cost_tires_faster() -> None:
    assert en.step_s(0.3, 3600, False, P, rate=1.6) > en.step_s(0.3, 3600, False, P, rate=1.0)


def test_a_stored_state_without_sleep_debt_still_loads_and_a_state_round_trips() -> None:
    old = en.Energy.from_dict({"s": 0.4, "asleep": False, "woke_at": 10.0, "at": 20.0})
    assert old.debt_h == 0.0 and old.slept_at is None
    state = en.Energy(s=0.3, asleep=True, woke_at=1.0, at=50.0, slept_at=40.0, debt_h=1.5)
    assert en.Energy.from_dict(state.to_dict()) == state


def test_sleep_debt_builds_over_short_nights_recovers_over_long_ones_and_naps_leave_it() -> None:
    e = en.Energy(s=0.65, asleep=False, woke_at=None, at=0.0)
    for _ in range(3):                                   # three 5 h nights
        e = en.switch(en.step(en.switch(e, asleep=True), e.at + 5 * 3600, P, asleep=True), asleep=False)
        e = en.step(e, e.at + 19 * 3600, P, asleep=False)
    assert e.debt_h == pytest.approx(5.25)               # carry 0.5 a night: 3, then 4.5, then 5.25
    nap = en.switch(en.step(en.switch(e, asleep=True), e.at + 1800, P, asleep=True), asleep=False)
    assert nap.debt_h == e.debt_h and nap.s < e.s        # a nap lowers S, not the debt
    for _ in range(3):                                   # three 10 h nights pay it back
        e = en.switch(en.step(en.switch(e, asleep=True), e.at + 10 * 3600, P, asleep=True), asleep=False)
        e = en.step(e, e.at + 14 * 3600, P, asleep=False)
    assert e.debt_h == 0.0


@given(st.floats(min_value=0.0, max_value=1.0), st.booleans(), st.booleans(),
       st.sampled_from((None, MIDNIGHT - 3000.0, MIDNIGHT - 40000.0)), st.floats(min_value=0.0, max_value=8.0),
       st.sampled_from((0.5, 1.0, 1.6)), st.lists(st.sampled_from((0.0, 300.0, 300.0, 450.0)), min_size=1, max_size=30))
def test_step_along_is_step_then_level_at_each_time_to_the_bit(s: float, was_asleep: bool, asleep: bool,
                                                               woke: float | None, debt: float, rate: float,
                                                               gaps: list[float]) -> None:
    start = en.Energy(s=s, asleep=was_asleep, woke_at=woke, at=MIDNIGHT, slept_at=MIDNIGHT - 30000.0, debt_h=debt)
    # the offset changes mid-run (a DST-like jump), as energy_params may from one hour to the next
    def params_at(t: float) -> en.EnergyParams:
        return en.EnergyParams(chronotype_shift_h=0.7, utc_offset_h=8.0 if t < MIDNIGHT + 3000.0 else 9.0)
    times, t = [], MIDNIGHT - 300.0
    for gap in gaps:
        t += gap
        times.append(t)
    one, expected = start, []
    for t in times:
        one = en.step(one, t, params_at(t), asleep=asleep, rate=rate)
        expected.append(en.level(one, params_at(t)))
    last, levels = en.step_along(start, times, params_at, asleep=asleep, rate=rate)
    assert levels == expected   # exact equality: the simulator's trace must not move by one bit
    assert last == one


def _crossing_by_steps(s: float, start: float, params: en.EnergyParams, asleep: bool, limit_h: float = 30.0,
                       step: float = 300.0) -> float:
    """crossing as the published loop reads, through step_s and thresholds (the fast loop must equal it)."""
    t, cur, end = start, s, start + limit_h * 3600.0

    def gap_of(s_: float, t_: float) -> float:
        h_plus, h_minus = en.thresholds(t_, params)
        return (h_minus - s_) if asleep else (s_ - h_plus)

    prev = gap_of(cur, t)
    while t < end:
        nxt = en.step_s(cur, step, asleep, params)
        gap = gap_of(nxt, t + step)
        if gap >= 0:
            frac = 0.0 if gap == prev else -prev / (gap - prev)
            return t + step * min(1.0, max(0.0, frac))
        t, cur, prev = t + step, nxt, gap
    return end


@given(st.floats(min_value=0.0, max_value=1.0), st.booleans(), st.floats(min_value=0.0, max_value=86400.0),
       st.floats(min_value=-2.0, max_value=2.0), st.sampled_from((300.0, 60.0, 977.0)),
       st.sampled_from((8.0, 9.0, -5.0)))
def test_crossing_is_the_step_by_step_loop_to_the_bit(s: float, asleep: bool, offset: float, shift: float,
                                                      step: float, utc: float) -> None:
    params = en.EnergyParams(chronotype_shift_h=shift, utc_offset_h=utc)
    start = MIDNIGHT + offset
    assert en.crossing(s, start, params, asleep=asleep, step_s_=step) == _crossing_by_steps(s, start, params, asleep,
                                                                                           step=step)
    assert en.circadian(start, params) == sum(a * math.sin((i + 1) * (2.0 * math.pi * (
        en.local_hour(start, params) - en.C_PHASE_H - shift) / 24.0)) for i, a in enumerate(en.HARMONICS))


def test_crossing_refuses_a_grid_that_does_not_move() -> None:
    from engine.errors import InputError

    with pytest.raises(InputError, match="grid step"):
        en.crossing(0.3, MIDNIGHT, P, asleep=False, step_s_=0.0)
