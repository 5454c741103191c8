"""Her day machine (issue 12): her week, cast, household, windows from her wake time, weather, and feelings steering."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine import activity as act
from engine.companion import create_companion
from engine.control import Switches
from engine.inner import appraise_turn, interrupt_for_chat, resume_after_gap, step_inner
from engine.life import household as house_model
from engine.life.cast import cast, overdue
from engine.life.catalogue import USES, catalogue
from engine.life.machine import DISAPPOINTED_PUSH, mood_inputs
from engine.life.place import city
from engine.life.scene import Outcome
from engine.life.state import world_of
from engine.life.week import shape_of
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store import life as store
from engine.store.core import get_companion

S = Settings()
TZ = S.life.tz
ZONE = ZoneInfo(TZ)
ON = Switches.defaults()  # every switch on
BIRTH = ("1990-08-15 08:30", "Asia/Shanghai", 2)
KINDS = {"sleep", "nap", "breakfast", "lunch", "dinner", "reading", "journal", "drawing", "music", "walk", "exercise",
         "call_friend", "chores", "groceries", "study", "drama", "daydream", "chat", "commute", "work", "cook", "bake",
         "meet_friend", "family_visit", "outing", "movie", "cafe", "plants", "laundry", "wash", "shopping", "festival",
         "phone"}


def local(y: int, m: int, d: int, h: float = 0.0) -> float:
    return (dt.datetime(y, m, d, tzinfo=ZONE) + dt.timedelta(hours=h)).timestamp()


@cache
def kept_run(start: str, days: int, forecast_next: bool = False) -> Path:
    """One simulated run kept in a database file (activity rows with their detail), shared by the tests."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="anima-life-test-")) / "run.db"
    simulate(S, days=days, start=parse_start(start, TZ), birth=BIRTH, name="小安", step_s=900.0, keep=str(path),
             forecast_next=forecast_next)
    return path


def rows_of(path: Path, since: float, until: float) -> list[dict]:
    conn = connect(path, readonly=True)
    try:
        return store.activities(conn, since, until)
    finally:
        conn.close()


def minutes_by_day(rows: list[dict]) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for r in rows:
        end = r["ended_at"] if r["ended_at"] is not None else r["expected_end"]
        out.setdefault(act.day_of(r["started_at"], TZ), Counter())[r["kind"]] += (end - r["started_at"]) / 60
    return out


# --- catalogue and cast --------------------------------------------------------------------------


def test_catalogue_has_the_agreed_kinds_with_time_use_groups_and_weather_flags() -> None:
    specs = catalogue()
    assert set(specs) == KINDS
    assert {s.use for s in specs.values()} <= set(USES)
    assert {"work", "commute", "sleep", "meal", "domestic", "social", "care"} <= {s.use for s in specs.values()}
    assert {k for k, s in specs.items() if s.outdoor} >= {"walk", "outing"}
    assert not specs["reading"].outdoor and specs["meet_friend"].out


def test_cast_has_friends_and_family_and_the_most_overdue_comes_first() -> None:
    members = cast()
    assert len(members) >= 6
    assert {m.relation for m in members.values()} >= {"friend", "mother", "father"}
    now = local(2025, 3, 1)
    met = {m.id: now - 1 * 86400 for m in members.values()}
    assert overdue(met, now, lives="same_city") == []
    met["linlin"] = now - 30 * 86400
    met["zhouzhou"] = now - 20 * 86400
    due = [m.id for m, _ in overdue(met, now, lives="same_city")]
    assert due[:2] == ["linlin", "zhouzhou"] and all(m.lives == "same_city" for m, _ in overdue(met, now,
                                                                                             lives="same_city"))


# --- her week ------------------------------------------------------------------------------------


def test_calendar_decides_work_off_and_family_days() -> None:
    home = city(S.life.city)

    def shape(y: int, m: int, d: int) -> str:
        return shape_of(world_of(dt.date(y, m, d), home, "k"))

    assert shape(2025, 1, 6) == "work"        # a Monday
    assert shape(2025, 1, 11) == "off"        # a Saturday
    assert shape(2025, 1, 26) == "work"       # a Sunday worked to bridge the Spring Festival (调休)
    assert shape(2025, 10, 2) == "off"        # 国庆
    assert shape(2025, 1, 28) == "family"     # 除夕
    assert shape(2025, 2, 3) == "family"      # 初六, her last day at her parents'
    assert shape(2025, 2, 4) == "off"         # still a statutory holiday, back in her city
    assert shape(2025, 2, 8) == "work"        # a Saturday worked (调休)


def test_workdays_have_commute_and_work_and_rest_days_do_not() -> None:
    by_day = minutes_by_day(rows_of(kept_run("2025-01-06T04:00", 14), local(2025, 1, 6, 4), local(2025, 1, 20, 4)))
    for day, minutes in by_day.items():
        weekday = dt.date.fromisoformat(day).weekday()
        if weekday < 5:
            assert minutes["work"] >= 6 * 60 and minutes["commute"] >= 50, (day, minutes)
        else:
            assert minutes["work"] == 0 and minutes["commute"] == 0, (day, minutes)
    weekend = Counter()
    for day, minutes in by_day.items():
        if dt.date.fromisoformat(day).weekday() >= 5:
            weekend.update(minutes)
    assert set(weekend) & {"outing", "meet_friend", "movie", "shopping", "cafe"}, weekend


def test_the_spring_festival_is_lived_at_her_parents() -> None:
    path = kept_run("2025-01-27T04:00", 9)
    rows = rows_of(path, local(2025, 1, 27, 4), local(2025, 2, 5, 4))
    eve = [r for r in rows if act.day_of(r["started_at"], TZ) == "2025-01-28"]
    kinds = [r["kind"] for r in eve]
    assert "commute" in kinds and "festival" in kinds and "work" not in kinds
    dinner = next(r for r in eve if r["kind"] == "dinner")
    assert dinner["detail"].get("with") in {m.id for m in cast().values() if m.relation in ("mother", "father")}
    holiday = [r for r in rows if "2025-01-28" <= act.day_of(r["started_at"], TZ) <= "2025-02-03"]
    assert not [r for r in holiday if r["kind"] == "work"]
    assert sum(r["kind"] == "family_visit" for r in holiday) >= 3
    assert any(r["kind"] == "festival" and act.day_of(r["started_at"], TZ) == "2025-01-29" for r in rows)  # 拜年


# --- household and windows -----------------------------------------------------------------------


def test_chores_come_from_the_household_state() -> None:
    day = "2025-03-04"
    house = house_model.Household(pantry=2.0, basket=4.0, watered_day="2025-03-01")
    assert house_model.needs(house, day) == {"groceries", "laundry", "plants"}
    for kind in ("groceries", "laundry", "plants"):
        house = house_model.after(house, kind, day, at_home=True)
    assert house_model.needs(house, day) == frozenset()
    fed = house_model.after(house, "dinner", day, at_home=True)
    assert fed.pantry == house.pantry - 1.0
    assert house_model.after(house, "dinner", day, at_home=False) == house   # a meal out takes nothing


def test_in_a_fortnight_she_shops_when_the_fridge_runs_low_and_never_sits_for_hours() -> None:
    rows = rows_of(kept_run("2025-01-06T04:00", 14), local(2025, 1, 6, 4), local(2025, 1, 20, 4))
    kinds = Counter(r["kind"] for r in rows)
    assert 2 <= kinds["groceries"] <= 8 and 2 <= kinds["laundry"] <= 7 and 3 <= kinds["plants"] <= 8, kinds
    for r in rows:
        if r["kind"] == "daydream":
            assert r["expected_end"] - r["started_at"] <= 60 * 60, r


def test_rain_keeps_her_in_and_can_disappoint() -> None:
    world = world_of(dt.date(2025, 4, 12), city(S.life.city), "k")
    day = "2025-04-12"
    plan = {"day": day, "shape": "off", "wake_at": act.at_local(day, 7, TZ), "sleep_at": act.at_local(day, 23, TZ),
            "anchors": [["dinner", "dinner", act.at_local(day, 18.5, TZ), None, "家"]], "done": [], "naps": 0,
            "nap": False, "counts": {}}

    def outdoor_share(weather: str) -> float:
        w = dataclasses.replace(world, weather=weather)
        picks = [act.choose(act.Situation(
            seed_key="k", t=act.at_local(day, 9 + i * 0.013, TZ), plan=plan, persona=Persona(), world=w, energy=0.8,
            mood_dev=(0.0, 0.0), last_social_at=None, previous=None, tz=TZ, tired_energy=0.2, lonely_after_h=6,
            needs=frozenset(), friends_due=(), family_due=())).kind for i in range(300)]
        return sum(catalogue()[k].outdoor for k in picks) / len(picks)

    assert outdoor_share("大雨") < 0.5 * outdoor_share("晴")
    pushes = mood_inputs(catalogue()["walk"], Outcome.DISAPPOINTED, 0.6)
    assert pushes[0].delta == DISAPPOINTED_PUSH and pushes[0].delta[0] < 0


# --- feelings and late nights steer --------------------------------------------------------------


@pytest.fixture
def two_lives(tmp_path: Path):
    """Two databases with the same companion, stepped identically until a test makes them differ."""
    conns = []
    start = local(2025, 3, 3, 6)
    for name in ("control", "treated"):
        c = connect(tmp_path / f"{name}.db")
        migrate(c, now=start)
        create_companion(c, name="小安", birth_local=BIRTH[0], tz=BIRTH[1], place=None, sect=2, now=start)
        conns.append(c)
    persona = Persona.from_dict(get_companion(conns[0])["persona"])
    for c in conns:
        resume_after_gap(c, S, persona, None, start)
    yield conns, persona, start
    for c in conns:
        c.close()


def _run(conn, persona, t: float, until: float, step: float = 900.0) -> float:
    while t < until:
        t = min(until, t + step)
        step_inner(conn, S, persona, t, ON)
    return t


def test_a_sad_evening_chat_changes_her_next_day(two_lives) -> None:
    (control, treated), persona, start = two_lives
    evening = local(2025, 3, 4, 20)
    for c in (control, treated):
        _run(c, persona, start, evening)
    for i in range(3):
        at = evening + i * 120
        interrupt_for_chat(treated, f"t{i}", at, quiet_after_chat_s=S.life.quiet_after_chat_s)
        appraise_turn(treated, S, persona, "我今天被裁员了，真的很难过", None, {"valence": -0.8, "arousal": 0.3,
                                                                        "dominance": -0.4}, at)
    for c in (control, treated):
        _run(c, persona, evening, local(2025, 3, 6, 4))
    lo, hi = local(2025, 3, 5, 4), local(2025, 3, 6, 4)
    day_a = [(r["kind"], round(r["started_at"])) for r in store.activities(control, lo, hi)]
    day_b = [(r["kind"], round(r["started_at"])) for r in store.activities(treated, lo, hi)]
    assert day_a != day_b


def test_a_chat_until_three_moves_her_sleep_and_lowers_next_day_energy(two_lives) -> None:
    (control, treated), persona, start = two_lives
    evening = local(2025, 3, 4, 21)
    for c in (control, treated):
        _run(c, persona, start, evening)
    t = evening
    while t < local(2025, 3, 5, 3):
        interrupt_for_chat(treated, None, t, quiet_after_chat_s=S.life.quiet_after_chat_s)
        step_inner(treated, S, persona, t, ON)
        t += 300
    _run(treated, persona, t, local(2025, 3, 5, 22))
    _run(control, persona, evening, local(2025, 3, 5, 22))

    def night(conn) -> dict:
        return next(r for r in store.activities(conn, local(2025, 3, 4, 20), local(2025, 3, 5, 6))
                    if r["kind"] == "sleep" and r["status"] == "done")

    assert night(treated)["started_at"] >= local(2025, 3, 5, 3)
    assert night(control)["started_at"] < local(2025, 3, 5, 1)

    def day_energy(conn) -> float:
        points = store.trace(conn, local(2025, 3, 5, 10), local(2025, 3, 5, 20))
        return sum(p["e"] for p in points) / len(points)

    assert day_energy(treated) < day_energy(control) - 0.05


def test_every_preview_over_a_fortnight_is_what_happens() -> None:
    forecast = rows_of(kept_run("2025-01-06T04:00", 14, forecast_next=True), local(2025, 1, 6, 4),
                       local(2025, 1, 20, 4))
    pairs = [(a, b) for a, b in zip(forecast, forecast[1:], strict=False) if a["next_kind"]]
    assert len(pairs) > 200
    assert all(a["next_kind"] == b["kind"] for a, b in pairs)
    # The forecast is pure: a run without it (simulate's default) lives the very same fortnight.
    plain = rows_of(kept_run("2025-01-06T04:00", 14), local(2025, 1, 6, 4), local(2025, 1, 20, 4))
    assert [(r["kind"], r["started_at"], r["ended_at"]) for r in plain] == \
        [(r["kind"], r["started_at"], r["ended_at"]) for r in forecast]
    assert not any(r["next_kind"] for r in plain)


def test_narration_gets_a_scene_and_its_story_state_is_saved(tmp_path: Path, monkeypatch) -> None:
    from engine.life import machine
    from engine.life.narrate import StoryState

    scenes = []

    def fake_narrate(scene, story, seed, *_):
        scenes.append(scene)
        told = int(story.data.get("n", 0)) + 1
        return f"第{told}句：{scene.kind}", StoryState({"n": told})

    monkeypatch.setattr(machine, "narrate", fake_narrate)
    path = tmp_path / "run.db"
    simulate(S, days=4, start=parse_start("2025-01-11T04:00", TZ), birth=BIRTH, name="小安", step_s=900.0,
             keep=str(path))
    conn = connect(path, readonly=True)
    try:
        events = store.life_events(conn, told_only=False)
        state = store.get_inner_state(conn)
    finally:
        conn.close()
    assert events and all(e["text"].startswith("第") for e in events)
    assert state["story"] == {"n": len(scenes)} and len(scenes) == len(events)
    assert all(s.world.date == s.ended.date() and s.minutes >= 1 for s in scenes)
    met = [s for s in scenes if s.kind in ("meet_friend", "call_friend")]
    assert met and all(s.with_whom is not None and s.with_whom.id in cast() for s in met)


def test_a_fresh_run_is_replayed_exactly_in_its_activity_details() -> None:
    first = rows_of(kept_run("2025-01-06T04:00", 14), local(2025, 1, 6, 4), local(2025, 1, 9, 4))
    import tempfile

    again = Path(tempfile.mkdtemp(prefix="anima-life-test-")) / "again.db"
    simulate(S, days=3, start=parse_start("2025-01-06T04:00", TZ), birth=BIRTH, name="小安", step_s=900.0,
             keep=str(again))
    second = rows_of(again, local(2025, 1, 6, 4), local(2025, 1, 9, 4))
    key = [(r["kind"], r["started_at"], r["expected_end"], r["detail"].get("with"), r["detail"].get("outcome"))
           for r in first]
    assert key == [(r["kind"], r["started_at"], r["expected_end"], r["detail"].get("with"), r["detail"].get("outcome"))
                   for r in second]


@pytest.mark.parametrize("role", ["student", "freelance"])
def test_other_roles_have_their_own_week(role: str) -> None:
    settings = dataclasses.replace(S, life=dataclasses.replace(S.life, role=role))
    report = simulate(settings, days=7, start=parse_start("2025-03-03T04:00", TZ), birth=BIRTH, name="小安",
                      step_s=900.0)
    monday = report["daily"][0]["minutes"]
    if role == "student":
        assert monday.get("study", 0) >= 5 * 60 and monday.get("work", 0) == 0 and 0 < monday.get("commute", 0) < 60
    else:
        assert monday.get("work", 0) >= 4 * 60 and monday.get("commute", 0) == 0
    saturday = report["daily"][5]["minutes"]
    assert saturday.get("work", 0) == 0 and saturday.get("commute", 0) == 0


def test_an_early_riser_never_sits_for_hours_before_her_day_starts() -> None:
    early = ("1985-12-01 22:10", "Asia/Shanghai", 2)     # chronotype -0.7 h
    report = simulate(S, days=7, start=parse_start("2025-03-08T04:00", TZ), birth=early, name="小安", step_s=900.0)
    assert report["chronotype_shift_h"] < -0.5
    idle = [a for a in report["timeline"] if a["kind"] == "daydream"]
    assert all(a["t1"] - a["t0"] <= 60 * 60 for a in idle), max(a["t1"] - a["t0"] for a in idle)


def test_an_unknown_role_or_city_is_a_config_error_naming_the_key() -> None:
    from engine.errors import ConfigError
    from engine.settings import parse_settings

    for line in ('role = "astronaut"', 'city = "火星"'):
        with pytest.raises(ConfigError, match=r"(role|city)"):
            parse_settings(f"[life]\n{line}\n")


def test_the_saved_day_state_is_one_valid_json_row_that_round_trips(two_lives) -> None:
    import json

    from engine.life.state import LifeState

    (conn, _), persona, start = two_lives
    _run(conn, persona, start, start + 86400)
    text = store.get_inner_state_text(conn)
    raw = json.loads(text)
    assert raw == LifeState.from_dict(raw).to_dict()
    assert {"plan", "met", "story", "house", "mood", "energy"} <= set(raw) and raw["plan"]["anchors"]
    interrupt_for_chat(conn, "t", start + 86400 + 1, quiet_after_chat_s=S.life.quiet_after_chat_s)
    assert store.get_inner_state(conn)["last_chat_at"] == start + 86400 + 1   # an outside write is read back
    step_inner(conn, S, persona, start + 86400 + 60, ON)
    assert store.get_inner_state(conn)["last_chat_at"] == start + 86400 + 1


def test_the_saved_text_is_the_state_in_memory_at_every_beat(two_lives) -> None:
    # record.save re-encodes a slow part (plan, household, cast, story) only when it is a new object; the
    # text must still be, at every beat, exactly the state just stepped: its fast keys sorted, then the slow ones.
    import json

    from engine.life import record
    from engine.life.state import SLOW_PARTS, context

    (conn, _), persona, start = two_lives
    ctx = context(S, persona)
    t, texts = start, set()
    while t < start + 86400:
        t += 900.0
        step_inner(conn, S, persona, t, ON)
        text = store.get_inner_state_text(conn)
        state, _ = record.load_day(conn, ctx, t)   # the object save was given (the text it wrote is unchanged)
        full = state.to_dict()
        fast = json.dumps({k: v for k, v in full.items() if k not in SLOW_PARTS}, ensure_ascii=False, sort_keys=True)
        slow = json.dumps({k: full[k] for k in SLOW_PARTS}, ensure_ascii=False, sort_keys=True)
        assert text == fast[:-1] + ", " + slow[1:]
        texts.add(json.dumps(json.loads(text)["story"], sort_keys=True))
    assert len(texts) > 3   # the story moved on during the day, so the cache was both hit and missed


def test_the_context_is_built_once_per_settings_and_persona_and_never_served_stale() -> None:
    from engine.life.state import context

    other = dataclasses.replace(S, life=dataclasses.replace(S.life, role="student", city="北京"))
    persona = Persona(chronotype_shift_h=1.0)
    first = context(S, persona, forecast_next=False)
    assert context(S, persona, forecast_next=False) is first               # the heartbeat's case: no rebuild
    assert context(S, persona).forecast_next and not first.forecast_next
    assert context(S, persona, forecast_next=False) is first               # both flavours are kept
    swapped = context(other, persona)
    assert (swapped.role.name, swapped.city.name, swapped.settings) == ("student", "北京", other)
    assert context(S, None).persona == Persona() and context(S, None).settings is S
    back = context(S, persona, forecast_next=False)
    assert (back.role.name, back.city.name, back.persona) == ("illustrator", "杭州", persona)


def test_energy_params_by_hour_are_energy_params_at_every_time() -> None:
    from engine.life.state import energy_params, energy_params_by_hour

    # a zone with DST, so the offset changes within the stretch (2025-03-09 02:00 in New York)
    ny = dataclasses.replace(S, life=dataclasses.replace(S.life, tz="America/New_York"))
    persona = Persona(chronotype_shift_h=-0.5)
    start = dt.datetime(2025, 3, 8, 20, 0, tzinfo=ZoneInfo("America/New_York")).timestamp()
    at = energy_params_by_hour(ny, persona)
    times = [start + k * 280.0 for k in range(400)]
    assert [at(t) for t in times] == [energy_params(ny, persona, t) for t in times]
    assert len({at(t).utc_offset_h for t in times}) == 2


def test_a_disappointment_never_reads_as_a_success_in_the_fallback() -> None:
    from engine.life.fallback import completion_text

    for kind, spec in catalogue().items():
        if spec.disappoint > 0 or spec.outdoor:
            text = completion_text(kind, {"template": "0"}, disappointed=True)
            assert text and text not in spec.templates, kind
