"""Her feelings with causes (issue 24): the rules raise fitting named feelings, they fade over days, they show in
/v1/state's mood (words_zh, feelings) and they colour her days: lower valence, later sleep, sentences that say why."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine import feelings as feel
from engine import mood as mood_model
from engine.appraisal import read_events
from engine.companion import create_companion
from engine.control import Switches
from engine.errors import ConfigError
from engine.inner import appraise_turn, inner_snapshot, resume_after_gap, step_inner
from engine.life.machine import _felt, retarget, unsettled
from engine.life.scene import Outcome
from engine.life.state import context
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store.core import get_companion

TZ = ZoneInfo("Asia/Shanghai")
START = datetime(2025, 3, 3, 6, 0, tzinfo=TZ).timestamp()
ON = Switches.defaults()  # every switch on
S = Settings()
DAY = 86400.0
HOUR = 3600.0
GRIEF = "我外婆今天下午走了…我一直在哭"
GOOD = "我考上研究生了！太开心了"
NEG_OR_HOSTILE = {k.name_zh for k in feel.table().kinds.values() if k.sign != "pos"}
POSITIVE = {k.name_zh for k in feel.table().kinds.values() if k.sign == "pos"}
HOSTILE = {k.name_zh for k in feel.table().kinds.values() if k.sign == "hostile"}


def _felt_after(text: str, at: float = 0.0) -> list[feel.Feeling]:
    return feel.apply_raises([], feel.turn_raises(read_events(text)), at)


# --- the rules and equations (pure) -----------------------------------------------------------------------------


def test_a_grief_turn_raises_sad_words_and_never_a_glad_or_hostile_one() -> None:
    words = feel.words_zh(_felt_after(GRIEF), 0.0)
    assert words[0] == "难过" and 1 <= len(words) <= 3
    assert set(words) <= {"难过", "心疼", "担心"}
    assert not set(words) & (POSITIVE | HOSTILE)
    causes = {f["cause"] for f in feel.shown(_felt_after(GRIEF), 0.0)}
    assert causes == {"你家里人走了的事"}   # a category of hers, never the user's words


def test_good_news_raises_glad_words_and_no_sad_one() -> None:
    words = feel.words_zh(_felt_after(GOOD), 0.0)
    assert words and words[0] == "高兴"
    assert not set(words) & NEG_OR_HOSTILE


def test_a_line_without_news_raises_nothing() -> None:
    assert feel.words_zh(_felt_after("今天中午吃了一碗面"), 0.0) == []


def test_words_fade_over_days_not_hours() -> None:
    felt = _felt_after(GRIEF)
    assert feel.words_zh(felt, 20 * 3600.0)[0] == "难过"      # the next evening she is still sad
    assert "难过" in feel.words_zh(felt, 2 * DAY)
    assert feel.words_zh(felt, 7 * DAY) == []                  # a week later it has faded
    glad = _felt_after(GOOD)
    assert feel.words_zh(glad, 2 * DAY) == []                  # gladness is shorter than grief


def test_intensity_fades_exponentially_with_its_half_life() -> None:
    f = {"name": "sad", "i": 0.8, "at": 0.0, "cause": "x"}
    half = feel.table().kinds["sad"].half_life_h * 3600.0
    assert feel.intensity_at(f, half, feel.table().kinds["sad"].half_life_h) == pytest.approx(0.4)
    assert feel.combine(0.5, 0.5) == pytest.approx(0.75) and feel.combine(0.9, 0.9) < 1.0


def test_the_pull_of_grief_lowers_valence_and_of_gladness_raises_it() -> None:
    assert feel.pad_pull(_felt_after(GRIEF), 0.0)[0] < -0.1
    assert feel.pad_pull(_felt_after(GOOD), 0.0)[0] > 0.05
    assert feel.pad_pull([], 0.0) == (0.0, 0.0, 0.0)


def test_her_own_day_raises_feelings_seeded() -> None:
    assert feel.activity_raises("s", "walk", "disappointed", 0.8, 0.0)[0][0] == [("let_down", 0.45)]
    assert feel.activity_raises("s", "exercise", "done", 0.8, 0.0)[0][0][0][0] == "lively"
    assert feel.activity_raises("s", "sleep", "done", 0.8, 0.0) == []
    # a client's revisions come on some workdays, not every one, and the same life draws the same ones
    draws = [feel.activity_raises("s", "work", "done", 0.8, d * DAY) for d in range(200)]
    revised = sum(1 for d in draws if any(c == "甲方又要改稿" for _, c in d))
    assert 10 <= revised <= 50
    assert draws == [feel.activity_raises("s", "work", "done", 0.8, d * DAY) for d in range(200)]
    assert feel.waking_raises(4.5, 7.5)[0][0][0][0] == "tired" and feel.waking_raises(8.0, 7.5) == []


def test_a_night_rests_yesterdays_tiredness_and_a_short_one_tires_her_for_its_own_reason() -> None:
    evening = feel.raise_all([], [("tired", 0.9), ("glad", 0.5)], "忙了一整天", 22 * HOUR)
    morning = 31 * HOUR   # 07:00 the next day: 0.9 halved twice and more is still felt
    assert "tired" in [f["name"] for f in feel.current(evening, morning)]
    slept = feel.apply_raises(feel.rested(evening), feel.waking_raises(8.0, 7.5), morning)
    assert "tired" not in [f["name"] for f in feel.current(slept, morning)]
    short = feel.apply_raises(feel.rested(evening), feel.waking_raises(5.5, 7.5), morning)
    assert [f["cause"] for f in feel.current(short, morning) if f["name"] == "tired"] == ["没睡好"]
    assert [f["name"] for f in feel.rested(evening)] == ["glad"]   # only what sleep rests


def test_half_an_hour_short_is_not_said_as_a_bad_night_and_two_hours_short_is() -> None:
    ctx = context(S, Persona())
    from engine.life.machine import fresh_state

    morning = 31 * HOUR
    state = fresh_state(ctx, "seed", 0.0)
    for slept, said in ((7.2, False), (5.5, True)):
        woke = state.evolve(feelings=tuple(feel.apply_raises([], feel.waking_raises(slept, 7.5), morning)))
        felt = _felt(ctx, woke, morning + 20 * 60, Outcome.DONE)   # breakfast, twenty minutes after waking
        assert (felt.get("feeling_cause") == "没睡好") is said, (slept, felt)
    assert feel.raised_to(feel.current(feel.raise_all([], [("tired", 0.6)], "x", 0.0), 2 * HOUR)[0]) == \
        pytest.approx(0.6, abs=1e-3)   # the fading undone back to the raise


def test_a_malformed_table_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown feeling"):
        feel.parse({**_raw(), "turn_event": {"death": {"raise": {"nope": 1.0}, "cause_zh": "x"}}})
    with pytest.raises(ConfigError, match="malformed"):
        feel.parse({k: v for k, v in _raw().items() if k != "activity_tone"})
    with pytest.raises(ConfigError, match="waking.rests: unknown feeling 'sleepy'"):
        feel.parse({**_raw(), "waking": {**_raw()["waking"], "rests": ["sleepy"]}})


def _raw() -> dict:
    import tomllib
    from importlib import resources

    return tomllib.loads((resources.files("engine") / "data" / "feelings.toml").read_text(encoding="utf-8"))


def test_set_targets_moves_each_dimension_toward_its_target_in_closed_form() -> None:
    p = mood_model.MoodParams()
    m = mood_model.set_targets(mood_model.at_baseline(0.0), -0.2, 0.3, -0.1)
    later = mood_model.relax(m, 72 * 3600.0, p)
    assert later.mood == pytest.approx((-0.2, 0.3, -0.1), abs=0.01)
    # relax_along is the same arithmetic
    _, shown = mood_model.relax_along(m, [3600.0, 7200.0], p)
    assert shown[-1] == pytest.approx(mood_model.values(mood_model.relax(mood_model.relax(m, 3600.0, p), 7200.0, p), p))
    assert mood_model.Mood.from_dict(later.to_dict()) == later


# --- in her database ---------------------------------------------------------------------------------------------


@pytest.fixture
def conn(tmp_path: Path):
    c = connect(tmp_path / "anima.db")
    migrate(c, now=START)
    create_companion(c, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2, now=START)
    yield c
    c.close()


@pytest.fixture
def persona(conn) -> Persona:
    return Persona.from_dict(get_companion(conn)["persona"])


def test_the_snapshot_shows_her_words_and_their_causes(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    before = inner_snapshot(conn, S, persona, START + 60)["mood"]
    assert isinstance(before["words_zh"], list) and isinstance(before["feelings"], list)
    mood = appraise_turn(conn, S, persona, GRIEF, "抱抱你", None, START + 120)
    assert mood["words_zh"][0] == "难过" and not set(mood["words_zh"]) & (POSITIVE | HOSTILE)
    snap = inner_snapshot(conn, S, persona, START + 3600)["mood"]
    assert snap["words_zh"][0] == "难过"
    assert {"name_zh", "intensity", "cause"} == set(snap["feelings"][0])
    assert GRIEF not in repr(snap) and "外婆" not in repr(snap)
    assert snap["label"]   # the English label stays


def _valence_at(conn, persona, t0: float, until: float) -> float:
    t = t0
    while t < until:
        t = min(until, t + 300.0)
        step_inner(conn, S, persona, t, ON, forecast_next=False, summary=False)
    return float(inner_snapshot(conn, S, persona, until)["mood"]["v"])


def test_grief_lowers_her_valence_the_next_evening_against_a_control(tmp_path: Path) -> None:
    vs = []
    for told in (False, True):
        c = connect(tmp_path / f"{told}.db")
        migrate(c, now=START)
        create_companion(c, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2,
                         now=START)
        p = Persona.from_dict(get_companion(c)["persona"])
        resume_after_gap(c, S, p, None, START)
        night = datetime(2025, 3, 3, 21, 0, tzinfo=TZ).timestamp()
        _valence_at(c, p, START, night)
        if told:
            appraise_turn(c, S, p, GRIEF, None, None, night)
        vs.append(_valence_at(c, p, night, datetime(2025, 3, 4, 20, 0, tzinfo=TZ).timestamp()))
        c.close()
    assert vs[1] <= vs[0] - 0.08


def test_a_strong_sad_feeling_keeps_her_awake_and_names_its_cause() -> None:
    ctx = context(S, Persona())
    from engine.life.machine import fresh_state

    state = fresh_state(ctx, "seed", 0.0)
    assert not unsettled(state, 0.0)
    state = state.evolve(feelings=tuple(_felt_after(GRIEF)))
    assert unsettled(state, 3600.0) and not unsettled(state, 7 * DAY)
    felt = _felt(ctx, state, 20 * 3600.0, Outcome.DONE)
    assert felt == {"band": "neg", "feeling": "sad", "feeling_cause": "你家里人走了的事"}
    # and it pulls her mood layer down: the valence target is below the day's tone
    assert retarget(ctx, state, 3600.0, "work").mood.tone < state.day_tone - 0.1
    assert math.isfinite(retarget(ctx, state, 3600.0, None).mood.tone_a)


def test_she_holds_trivial_sharing_back_while_the_user_is_low() -> None:
    from engine.share import Candidate, decide
    from engine.usecases.share import user_is_low

    grief = feel.shown(_felt_after(GRIEF), 3600.0)
    assert user_is_low(grief) and not user_is_low(feel.shown(_felt_after(GOOD), 0.0))
    assert not user_is_low(feel.shown(_felt_after(GRIEF), 7 * DAY))   # days later she shares again
    assert not user_is_low(feel.shown(_felt_after("今天好累啊"), 0.0))   # a tired user still hears about her day
    pool = [Candidate(life_event_id=1, text="坐地铁去工作室，路上四十分钟", ts=0.0, offers=0, last_offered_at=None)]
    kwargs = {"sociability": 0.9, "valence": 0.5, "arousal": 0.3, "now": 60.0, "last_offer_at": None}
    assert decide(pool, "你下午干嘛了", **kwargs).reason == "offered"
    assert decide(pool, "你下午干嘛了", user_low=True, **kwargs).reason == "not_in_the_mood"
    # asked about that very thing, she answers even while the user is low
    asked = decide(pool, "你今天坐地铁去工作室了吗，路上多久", user_low=True, **kwargs)
    assert asked.reason == "offered" and asked.life_event_id == 1
