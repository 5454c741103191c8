"""Mood dynamics (issue 3 acceptance 1): range, convergence, exact gaps, negativity bias; and the ALMA label."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import mood as m

unit = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
baseline = st.floats(min_value=-0.3, max_value=0.35, allow_nan=False)
half_life = st.floats(min_value=0.25, max_value=24.0, allow_nan=False)
lam = st.floats(min_value=1.5, max_value=2.5, allow_nan=False)


@st.composite
def params(draw: st.DrawFn) -> m.MoodParams:
    return m.MoodParams(baseline=(draw(baseline), draw(baseline), draw(baseline)),
                        half_life_h=(draw(half_life), draw(half_life), draw(half_life)),
                        negative_half_life_factor=draw(st.floats(min_value=1.0, max_value=3.0)),
                        loss_aversion=draw(lam))


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
def test_without_events_the_state_converges_to_the_baseline(p: m.MoodParams, seq: list) -> None:
    mood = m.at_baseline(0.0)
    for _, delta in seq:
        mood = m.push(mood, delta, p)
    longest = max(p.half_life_h) * p.negative_half_life_factor
    later = m.relax(mood, 60 * longest * 3600.0, p)   # 60 half-lives: 2^-60 of any deviation is left
    for x, b in zip(m.values(later, p), p.baseline, strict=True):
        assert abs(x - b) < 1e-9


@given(params(), st.tuples(unit, unit, unit), st.floats(min_value=1.0, max_value=7 * 86400.0),
       st.integers(min_value=2, max_value=500))
def test_one_step_of_a_gap_equals_many_small_steps(p: m.MoodParams, delta: tuple, gap: float, n: int) -> None:
    mood = m.push(m.at_baseline(0.0), delta, p)
    one = m.relax(mood, gap, p)
    many = mood
    for i in range(1, n + 1):
        many = m.relax(many, gap * i / n, p)
    for x, y in zip(m.values(one, p), m.values(many, p), strict=True):
        assert abs(x - y) <= 1e-9


@settings(max_examples=200)
@given(params(), st.floats(min_value=1.2, max_value=3.0), st.floats(min_value=0.01, max_value=0.5),
       st.integers(min_value=0, max_value=2))
def test_negative_push_moves_further_and_lasts_longer(p: m.MoodParams, factor: float, size: float, dim: int) -> None:
    p = m.MoodParams(baseline=p.baseline, half_life_h=p.half_life_h, negative_half_life_factor=factor,
                     loss_aversion=p.loss_aversion)
    up = [0.0, 0.0, 0.0]
    up[dim] = size
    down = [0.0, 0.0, 0.0]
    down[dim] = -size
    b = p.baseline[dim]
    pos = m.push(m.at_baseline(0.0), tuple(up), p)  # type: ignore[arg-type]
    neg = m.push(m.at_baseline(0.0), tuple(down), p)  # type: ignore[arg-type]
    assert abs(m.values(neg, p)[dim] - b) > abs(m.values(pos, p)[dim] - b)
    # Lasts longer: at every later time the negative deviation is the larger one...
    for half_lives in (0.25, 0.5, 1, 2, 4, 8, 16):
        t = half_lives * p.half_life_h[dim] * 3600.0
        dpos = abs(m.values(m.relax(pos, t, p), p)[dim] - b)
        dneg = abs(m.values(m.relax(neg, t, p), p)[dim] - b)
        assert dneg > dpos
    # ...and it takes longer to fade below a small threshold.
    assert _time_to_fade(neg, p, dim) > _time_to_fade(pos, p, dim)


def _time_to_fade(mood: m.Mood, p: m.MoodParams, dim: int, eps: float = 1e-3) -> float:
    t = 0.0
    while abs(m.values(m.relax(mood, t, p), p)[dim] - p.baseline[dim]) >= eps:
        t += 600.0
    return t


def test_relaxation_is_the_closed_form_near_the_baseline() -> None:
    p = m.MoodParams(baseline=(0.0, 0.0, 0.0), half_life_h=(6.0, 2.0, 8.0), negative_half_life_factor=1.0)
    mood = m.push(m.at_baseline(0.0), (0.01, 0.0, 0.0), p)
    later = m.relax(mood, 6 * 3600.0, p)
    assert math.isclose(later.pos[0], 0.005, rel_tol=1e-12)   # exactly one half-life: half the deviation


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
