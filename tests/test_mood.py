"""Mood dynamics: two layers (emotion -> mood), range, convergence, exact gaps, valence-only negativity; ALMA labels."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import mood as m

unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
baseline = st.floats(min_value=-0.3, max_value=0.35, allow_nan=False)
half_life = st.floats(min_value=0.25, max_value=24.0, allow_nan=False)
H = 3600.0


@st.composite
def params(draw: st.DrawFn) -> m.MoodParams:
    return m.MoodParams(baseline=(draw(baseline), draw(baseline), draw(baseline)),
                        half_life_h=(draw(half_life), draw(half_life), draw(half_life)),
                        loss_aversion=draw(st.floats(min_value=1.5, max_value=2.5)),
                        emotion_half_life_min=draw(st.floats(min_value=5.0, max_value=60.0)),
                        mood_gain=draw(st.floats(min_value=0.0, max_value=0.95)))


events = st.lists(st.tuples(st.floats(min_value=0.0, max_value=48 * 3600.0),
                            st.tuples(st.floats(min_value=-50, max_value=50), st.floats(min_value=-50, max_value=50),
                                      st.floats(min_value=-50, max_value=50))), max_size=60)


@given(params(), events)
def test_values_stay_in_range_for_any_event_sequence(p: m.MoodParams, seq: list) -> None:
    mood = m.at_baseline(0.0)
    t = 0.0
    for gap, delta in seq:
        t += gap
        mood = m.push(m.relax(mood, t, p), delta, p)
        for x in m.values(mood, p):
            assert -1.0 <= x <= 1.0


@given(params(), events)
def test_a_long_quiet_run_converges_to_the_baseline(p: m.MoodParams, seq: list) -> None:
    mood = m.at_baseline(0.0)
    for _, delta in seq:
        mood = m.push(mood, delta, p)
    longest = max(*p.half_life_h, p.emotion_half_life_min / 60.0)
    later = m.relax(mood, 80 * longest * H, p)   # 80 half-lives of the slowest layer
    for x, b in zip(m.values(later, p), p.baseline, strict=True):
        assert abs(x - b) < 1e-9


@given(params(), st.tuples(unit, unit, unit), st.floats(min_value=1.0, max_value=7 * 86400.0),
       st.integers(min_value=2, max_value=500), st.floats(min_value=-0.3, max_value=0.3))
def test_one_step_of_a_gap_equals_many_small_steps(p: m.MoodParams, delta: tuple, gap: float, n: int,
                                                   tone: float) -> None:
    mood = m.set_tone(m.push(m.at_baseline(0.0), delta, p), tone)
    one = m.relax(mood, gap, p)
    many = mood
    for i in range(1, n + 1):
        many = m.relax(many, gap * i / n, p)
    for x, y in zip(m.values(one, p), m.values(many, p), strict=True):
        assert abs(x - y) <= 1e-9


def test_the_closed_form_solves_the_two_layer_equations() -> None:
    """Integrate de/dt = -alpha e, dm/dt = -beta (m - T) + k e numerically (RK4, 10 s steps) and compare."""
    p = m.MoodParams(emotion_half_life_min=20.0, mood_gain=0.35)
    alpha, beta = m.LN2 / (20 * 60.0), m.LN2 / (6.0 * H)
    k, tone = 0.35 * alpha, -0.05
    e, mm, h = 0.4, 0.1, 10.0

    def f(e_: float, m_: float) -> tuple[float, float]:
        return -alpha * e_, -beta * (m_ - tone) + k * e_

    for _ in range(int(3 * H / h)):
        k1 = f(e, mm)
        k2 = f(e + h / 2 * k1[0], mm + h / 2 * k1[1])
        k3 = f(e + h / 2 * k2[0], mm + h / 2 * k2[1])
        k4 = f(e + h * k3[0], mm + h * k3[1])
        e += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        mm += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    state = m.Mood(emotion=(0.4, 0.0, 0.0), mood=(0.1, 0.0, 0.0), at=0.0, tone=tone)
    later = m.relax(state, 3 * H, p)
    assert math.isclose(later.emotion[0], e, rel_tol=1e-9)
    assert math.isclose(later.mood[0], mm, rel_tol=1e-9)


def test_an_emotion_fades_in_minutes_and_leaves_a_little_mood_for_hours() -> None:
    p = m.MoodParams(baseline=(0.0, 0.0, 0.0))
    mood = m.push(m.at_baseline(0.0), (0.3, 0.0, 0.0), p)
    assert m.values(mood, p)[0] == m.saturate(0.0, 0.3)      # felt at once, in full
    after_half_life = m.relax(mood, 20 * 60.0, p)
    assert math.isclose(after_half_life.emotion[0], 0.15, rel_tol=1e-12)
    two_h = m.values(m.relax(mood, 2 * H, p), p)[0]
    assert 0.05 < two_h < 0.12                               # the emotion is gone; ~a third of it is mood
    eight_h = m.values(m.relax(mood, 8 * H, p), p)[0]
    assert 0.02 < eight_h < two_h                            # still there in the evening, fading


def test_one_event_changes_mood_a_little_and_a_run_of_events_a_lot() -> None:
    p = m.MoodParams(baseline=(0.0, 0.0, 0.0))
    one = m.push(m.at_baseline(0.0), (-0.1, 0.0, 0.0), p)
    run = m.at_baseline(0.0)
    for i in range(8):                                       # eight bad moments in two hours
        run = m.push(m.relax(run, i * 900.0, p), (-0.1, 0.0, 0.0), p)
    end = 7 * 900.0
    single = m.values(m.relax(one, end + 2 * H, p), p)[0]
    many = m.values(m.relax(run, end + 2 * H, p), p)[0]
    assert -0.06 < single < 0
    assert many < 6 * single                                 # a run piles up in the mood
    assert min(m.values(m.relax(run, t, p), p)[0] for t in (end, end + 600)) < -0.2


@settings(max_examples=200)
@given(params(), unit, st.integers(min_value=0, max_value=2), st.floats(min_value=60.0, max_value=48 * H))
def test_a_push_adds_at_most_its_immediate_step_at_any_later_time(p: m.MoodParams, size: float, dim: int,
                                                                  t: float) -> None:
    delta = [0.0, 0.0, 0.0]
    delta[dim] = size
    base = m.at_baseline(0.0)
    pushed = m.push(base, tuple(delta), p)  # type: ignore[arg-type]
    immediate = abs(m.values(pushed, p)[dim] - m.values(base, p)[dim])
    later = abs(m.values(m.relax(pushed, t, p), p)[dim] - m.values(m.relax(base, t, p), p)[dim])
    assert later <= immediate + 1e-12


@settings(max_examples=200)
@given(params(), st.floats(min_value=0.01, max_value=0.5))
def test_bad_weighs_more_than_good_on_valence_and_fades_at_the_same_rate(p: m.MoodParams, size: float) -> None:
    b = p.baseline[0]
    up = m.push(m.at_baseline(0.0), (size, 0.0, 0.0), p)
    down = m.push(m.at_baseline(0.0), (-size, 0.0, 0.0), p)
    w = p.valence_negative_weight
    assert 1.5 <= w <= 2.0
    assert math.isclose(down.emotion[0], -w * up.emotion[0], rel_tol=1e-12)
    for t in (0.0, 600.0, H, 6 * H, 24 * H):
        dup, ddown = m.relax(up, t, p), m.relax(down, t, p)
        # the same fade: the latent ratio stays the weight at every time (no second, slower-fade mechanism)
        assert math.isclose(ddown.mood[0] + ddown.emotion[0], -w * (dup.mood[0] + dup.emotion[0]),
                            rel_tol=1e-9, abs_tol=1e-15)
        assert abs(m.values(ddown, p)[0] - b) >= abs(m.values(dup, p)[0] - b) - 1e-15


@given(params(), st.floats(min_value=0.01, max_value=1.0), st.sampled_from([1, 2]))
def test_arousal_and_dominance_are_symmetric(p: m.MoodParams, size: float, dim: int) -> None:
    up, down = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    up[dim], down[dim] = size, -size
    for t in (0.0, 900.0, 4 * H):
        a = m.relax(m.push(m.at_baseline(0.0), tuple(up), p), t, p)  # type: ignore[arg-type]
        b = m.relax(m.push(m.at_baseline(0.0), tuple(down), p), t, p)  # type: ignore[arg-type]
        assert a.emotion[dim] + a.mood[dim] == -(b.emotion[dim] + b.mood[dim])


def test_the_persona_sensitivity_maps_onto_the_negativity_weight_range() -> None:
    assert m.MoodParams(loss_aversion=1.5).valence_negative_weight == 1.5
    assert m.MoodParams(loss_aversion=2.5).valence_negative_weight == 2.0
    assert m.MoodParams(loss_aversion=2.0).valence_negative_weight == 1.75
    assert m.MoodParams(loss_aversion=2.5, negativity_weight=1.6).valence_negative_weight == 1.6


def test_the_mood_layer_drifts_to_the_days_tone_with_its_half_life() -> None:
    p = m.MoodParams(baseline=(0.1, 0.0, 0.0), half_life_h=(6.0, 2.0, 8.0))
    toned = m.set_tone(m.at_baseline(0.0), -0.2)
    assert m.values(toned, p)[0] == 0.1                      # no jump when the day's tone is set
    assert math.isclose(m.relax(toned, 6 * H, p).mood[0], -0.1, rel_tol=1e-12)
    assert abs(m.values(m.relax(toned, 200 * H, p), p)[0] - m.saturate(0.1, -0.2)) < 1e-6


def test_a_stored_one_layer_state_still_loads_and_a_state_round_trips() -> None:
    old = m.Mood.from_dict({"pos": [0.2, 0.4, 0.0], "neg": [-0.8, -0.3, -0.5], "at": 5.0})
    assert old.emotion == (0.0, 0.0, 0.0) and old.tone == 0.0 and old.at == 5.0
    assert [round(x, 12) for x in old.mood] == [-0.6, 0.1, -0.5]
    state = m.Mood(emotion=(0.1, -0.2, 0.0), mood=(-0.3, 0.05, 0.2), at=9.0, tone=-0.07)
    assert m.Mood.from_dict(state.to_dict()) == state


def test_clock_going_backwards_does_not_step() -> None:
    p = m.MoodParams()
    mood = m.push(m.at_baseline(100.0), (0.5, 0.0, 0.0), p)
    assert m.relax(mood, 50.0, p) == mood


def test_alma_labels() -> None:
    assert m.label(0.1, 0.1, 0.1) == "slightly exuberant"
    assert m.label(0.5, -0.5, 0.5) == "moderately relaxed"
    assert m.label(-0.9, 0.9, -0.9) == "fully anxious"
    assert m.label_zh(0.5, -0.5, 0.5) == "比较放松"
    assert len({m.octant(v, a, d) for v in (-1, 1) for a in (-1, 1) for d in (-1, 1)}) == 8


@settings(max_examples=60, deadline=None)
@given(params(), st.tuples(unit, unit, unit), st.tuples(unit, unit, unit), unit,
       st.lists(st.sampled_from((0.0, 60.0, 300.0, 300.0, 300.0, 1234.5)), min_size=1, max_size=40))
def test_relax_along_is_relax_then_values_at_each_time_to_the_bit(p: m.MoodParams, emotion: m.Triple,
                                                                   mood_dev: m.Triple, tone: float,
                                                                   gaps: list[float]) -> None:
    start = m.Mood(emotion=emotion, mood=mood_dev, at=1000.0, tone=tone)
    times, t = [], 1000.0 - 120.0   # the first time may lie before the state (no step there)
    for gap in gaps:
        t += gap
        times.append(t)
    one, expected = start, []
    for t in times:
        one = m.relax(one, t, p)
        expected.append(m.values(one, p))
    last, shown = m.relax_along(start, times, p)
    assert shown == expected          # exact equality: the simulator's trace must not move by one bit
    assert last == one
