"""Heartbeat stepping over the database: interrupt/resume/abandon, gaps, clock jumps, toggles, trace, privacy."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine import mood as mood_model
from engine.companion import create_companion
from engine.control import Switches
from engine.inner import (
    appraise_turn,
    inner_snapshot,
    interrupt_for_chat,
    mood_params,
    resume_after_gap,
    step_inner,
)
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store import life as store
from engine.store.core import set_control

START = datetime(2025, 3, 3, 6, 0, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()
ON = Switches.defaults()  # every switch on
S = Settings()


@pytest.fixture
def conn(tmp_path: Path):
    c = connect(tmp_path / "anima.db")
    migrate(c, now=START)
    create_companion(c, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2, now=START)
    yield c
    c.close()


@pytest.fixture
def persona(conn) -> Persona:
    from engine.store.core import get_companion

    return Persona.from_dict(get_companion(conn)["persona"])


def run_until(conn, persona, t: float, until: float, step: float = 300.0, settings: Settings = S,
              controls: Switches | None = None) -> float:
    while t < until:
        t = min(until, t + step)
        step_inner(conn, settings, persona, t, controls or ON)
    return t


def find_current(conn, persona, kind: str, t: float, min_left: float) -> float:
    """Step forward (up to a week: her choices follow her mood and week) until she is doing `kind` with min_left to go."""
    for _ in range(7 * 288):
        cur = store.current_activity(conn)
        if cur and cur["kind"] == kind and cur["expected_end"] - t >= min_left:
            return t
        t = run_until(conn, persona, t, t + 300)
    raise AssertionError(f"she never did {kind} in a week")


def test_exactly_one_current_activity_after_start(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    run_until(conn, persona, START, START + 86400)
    assert conn.execute("SELECT count(*) FROM activity WHERE status = 'current'").fetchone()[0] == 1


def test_a_step_says_which_activity_is_current_and_may_leave_out_the_mood_summary(conn, persona) -> None:
    # The simulator steps on what step_inner returns instead of reading the current activity back.
    resume_after_gap(conn, S, persona, None, START)
    t, moved = START, 0
    while t < START + 86400:
        t += 300.0
        result = step_inner(conn, S, persona, t, ON, summary=(moved % 2 == 0))
        row = store.current_activity(conn)
        keys = ("id", "kind", "label", "started_at", "expected_end", "why", "next_kind", "detail")
        assert {k: result["current"][k] for k in keys} == {k: row[k] for k in keys}
        assert (result["mood"] is None) == (moved % 2 == 1)
        moved += result["transitions"]
    assert moved > 10
    assert set(step_inner(conn, S, persona, t + 1, ON)["mood"]) == {"v", "a", "d", "e", "label", "words_zh", "feelings"}


def test_chat_suspends_reading_and_it_resumes_with_the_remaining_time(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = find_current(conn, persona, "reading", START, 25 * 60)
    reading = store.current_activity(conn)
    t += 60
    interrupt_for_chat(conn, "turn-1", t, quiet_after_chat_s=S.life.quiet_after_chat_s)
    remaining = reading["expected_end"] - t
    suspended = conn.execute("SELECT * FROM activity WHERE id = ?", (reading["id"],)).fetchone()
    assert suspended["status"] == "suspended" and suspended["interrupted_by"] == "turn-1"
    assert suspended["remaining_s"] == pytest.approx(remaining, abs=0.01)
    assert store.current_activity(conn)["kind"] == "chat"
    quiet_at = t + S.life.quiet_after_chat_s
    step_inner(conn, S, persona, quiet_at + 1, ON)
    resumed = store.current_activity(conn)
    assert resumed["kind"] == "reading" and resumed["why"] == "resume"
    assert resumed["started_at"] == pytest.approx(quiet_at)
    assert resumed["expected_end"] - resumed["started_at"] == pytest.approx(remaining, abs=0.01)
    assert resumed["detail"]["details"] == reading["detail"]["details"]  # same book
    kinds = [e["kind"] for e in store.life_events(conn, since=t, told_only=False)]
    assert kinds == ["resumed"]
    text = store.life_events(conn, since=t, told_only=False)[0]["text"]
    # Same book: the one she picks up again is the one she finishes the sitting with (narration's story state).
    run_until(conn, persona, quiet_at + 1, resumed["expected_end"] + 600)
    done = [e["text"] for e in store.life_events(conn, since=quiet_at, told_only=False) if e["kind"] == "completed"]
    book = re.search(r"《[^》]+》", text)
    assert book and done and book.group(0) in done[0]


def test_long_chat_means_the_interrupted_activity_is_abandoned(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = find_current(conn, persona, "reading", START, 25 * 60)
    reading = store.current_activity(conn)
    for i in range(30):  # a chat turn every 5 minutes for 2.5 hours keeps the chat going
        interrupt_for_chat(conn, f"turn-{i}", t + i * 300, quiet_after_chat_s=S.life.quiet_after_chat_s)
        step_inner(conn, S, persona, t + i * 300 + 1, ON)
    end = t + 29 * 300 + S.life.quiet_after_chat_s
    step_inner(conn, S, persona, end + 5, ON)
    row = conn.execute("SELECT status FROM activity WHERE id = ?", (reading["id"],)).fetchone()
    assert row["status"] == "abandoned"
    events = store.life_events(conn, since=t, told_only=False)
    assert [e["kind"] for e in events] == ["abandoned"]
    assert events[0]["ts"] == pytest.approx(end)
    assert store.current_activity(conn)["kind"] != "chat"


def test_gap_is_one_analytic_step_with_no_life_events_inside(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = run_until(conn, persona, START, START + 5 * 3600)
    appraise_turn(conn, S, persona, "今天好难过", None, None, t)
    before = store.get_inner_state(conn)
    stopped_doing = store.current_activity(conn)
    restart = t + 2 * 3600
    resume_after_gap(conn, S, persona, t, restart)
    after = store.get_inner_state(conn)
    mp = mood_params(S, persona)
    expected = mood_model.relax(mood_model.Mood.from_dict(before["mood"]), restart, mp)
    got = mood_model.Mood.from_dict(after["mood"])
    assert mood_model.values(got, mp) == pytest.approx(mood_model.values(expected, mp), abs=1e-12)
    assert store.life_events(conn, since=t + 0.001, until=restart, told_only=False) == []
    old = conn.execute("SELECT status, ended_at FROM activity WHERE id = ?", (stopped_doing["id"],)).fetchone()
    assert old["status"] == "abandoned" and old["ended_at"] <= t
    cur = store.current_activity(conn)
    assert cur["started_at"] == restart


def test_clock_going_backwards_steps_nothing_and_is_reported(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = run_until(conn, persona, START, START + 3600)
    before = store.get_inner_state(conn)
    result = step_inner(conn, S, persona, t - 600, ON)
    assert result["backwards"] is True and result["transitions"] == 0
    after = store.get_inner_state(conn)
    assert after["mood"]["pos"] == before["mood"]["pos"] and after["energy"]["s"] == before["energy"]["s"]
    assert step_inner(conn, S, persona, t - 300, ON)["backwards"] is False


def test_life_toggle_freezes_the_activity_machine(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = run_until(conn, persona, START, START + 3600)
    cur = store.current_activity(conn)
    n_events = len(store.life_events(conn, told_only=False))
    off = replace(ON, life=False)
    t = run_until(conn, persona, t, cur["expected_end"] + 3 * 3600, controls=off)
    assert store.current_activity(conn)["id"] == cur["id"]
    assert len(store.life_events(conn, told_only=False)) == n_events
    run_until(conn, persona, t, t + 300)
    assert store.current_activity(conn)["id"] != cur["id"]


def test_heartbeat_toggle_freezes_mood_and_energy(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = run_until(conn, persona, START, START + 3600)
    appraise_turn(conn, S, persona, "太好了，好开心", None, None, t)
    before = store.get_inner_state(conn)
    off = replace(ON, mood_step=False)
    run_until(conn, persona, t, t + 4 * 3600, controls=off)
    after = store.get_inner_state(conn)
    assert after["mood"]["pos"] == before["mood"]["pos"] and after["energy"]["s"] == before["energy"]["s"]


def test_mood_trace_is_bounded(conn, persona) -> None:
    short = dataclasses.replace(S, life=dataclasses.replace(S.life, trace_retention_days=0.1))
    resume_after_gap(conn, short, persona, None, START)
    end = run_until(conn, persona, START, START + 8 * 3600, step=60, settings=short)
    rows = store.trace(conn, 0, end + 1)
    interval = short.life.trace_interval_s
    assert len(rows) <= 0.1 * 86400 / interval + 2
    assert all(b["ts"] - a["ts"] >= interval for a, b in zip(rows, rows[1:], strict=False))
    assert rows[0]["ts"] >= end - 0.1 * 86400 - interval


def test_snapshot_has_the_agreed_shape_and_no_life_text(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = run_until(conn, persona, START, START + 86400)
    texts = [e["text"] for e in store.life_events(conn, told_only=False)]
    assert texts
    snap = inner_snapshot(conn, S, persona, t)
    assert set(snap) == {"mood", "energy", "activity"}
    assert set(snap["mood"]) == {"v", "a", "d", "e", "label", "words_zh", "feelings"}
    assert set(snap["activity"]) == {"kind", "label", "since", "until", "why", "next"}
    dumped = json.dumps(snap, ensure_ascii=False)
    for text in texts:
        assert text not in dumped
    for detail in store.current_activity(conn)["detail"].get("details", {}).values():
        if len(detail) > 1:
            assert detail not in dumped
    assert inner_snapshot(conn, S, None, t)["activity"] is not None  # works without a persona too


def test_chat_appraisal_pushes_mood_and_negative_more(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    base = inner_snapshot(conn, S, persona, START)["mood"]["v"]
    up = appraise_turn(conn, S, persona, "今天好开心", None, None, START)["v"] - base
    assert up > 0
    appraise_turn(conn, S, persona, None, None, {"valence": -0.0}, START)
    down_start = appraise_turn(conn, S, persona, None, None, None, START)["v"]
    down = appraise_turn(conn, S, persona, None, None, {"valence": -1.0}, START)["v"] - down_start
    up2_start = down_start + down
    up2 = appraise_turn(conn, S, persona, None, None, {"valence": 1.0}, START)["v"] - up2_start
    assert abs(down) > abs(up2) > 0


def test_appraisal_toggle_stops_pushes(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    set_control(conn, "appraisal", False, START)
    before = inner_snapshot(conn, S, persona, START)["mood"]
    after = appraise_turn(conn, S, persona, None, None, {"valence": -1.0}, START)
    assert after["v"] == before["v"]


def test_next_is_what_she_actually_does_when_nothing_interrupts(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    run_until(conn, persona, START, START + 2 * 86400)
    rows = store.activities(conn, START, START + 2 * 86400)
    with_next = [(a, b) for a, b in zip(rows, rows[1:], strict=False) if a["next_kind"]]
    assert len(with_next) > 20
    assert all(a["next_kind"] == b["kind"] for a, b in with_next)
    snap = inner_snapshot(conn, S, persona, START + 2 * 86400)
    cur = store.current_activity(conn)
    if cur["next_kind"]:
        assert snap["activity"]["next"] is not None


def test_a_chat_at_night_wakes_her_and_she_goes_back_to_sleep(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = find_current(conn, persona, "sleep", START, 3 * 3600)
    sleep = store.current_activity(conn)
    interrupt_for_chat(conn, "night-turn", t + 60, quiet_after_chat_s=S.life.quiet_after_chat_s)
    step_inner(conn, S, persona, t + 60 + S.life.quiet_after_chat_s + 1, ON)
    again = store.current_activity(conn)
    assert again["kind"] == "sleep" and again["why"] == "resume"
    assert again["expected_end"] == pytest.approx(sleep["expected_end"])   # she still wakes when she planned to


def test_a_quick_restart_is_not_a_gap_in_her_day(conn, persona) -> None:
    resume_after_gap(conn, S, persona, None, START)
    t = find_current(conn, persona, "reading", START, 25 * 60)
    reading = store.current_activity(conn)
    resume_after_gap(conn, S, persona, t, t + 20)
    assert store.current_activity(conn)["id"] == reading["id"]


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def info(self, event: str, **kw) -> None:
        self.events.append((event, kw))

    warning = info
    error = info
    debug = info


async def test_life_component_resumes_publishes_persona_and_steps(tmp_path: Path) -> None:
    from daemon.clock import FakeClock
    from daemon.companion_beat import CompanionBeat
    from daemon.component import DaemonContext
    from daemon.db import AsyncStore
    from daemon.life_component import build
    from engine.store.core import get_companion

    db = tmp_path / "anima.db"
    c = connect(db)
    migrate(c, now=START)
    create_companion(c, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2, now=START)
    companion = get_companion(c)
    c.close()
    clock = FakeClock(START + 7200)
    store_ = await AsyncStore(db).open()
    log = _Log()
    ctx = DaemonContext(settings=S, db_path=db, clock=clock, store=store_, log=log, controls=ON.legacy(),
                        companion=companion)
    ctx.last_beat_before_start = START
    part = build(ctx)
    heart = CompanionBeat(ctx, log, handle=None, worker=lambda: None, api=lambda: None)  # her beat: daemon/beat.py
    try:
        await part.start(ctx)
        assert isinstance(ctx.persona, Persona)
        assert "doing" in ctx.status_summary
        for _ in range(10):
            clock.advance(15)
            await heart.beat(clock.monotonic())
        clock.step(-60)  # the wall clock set back a minute
        await heart.beat(clock.monotonic())
        assert ("clock.backwards", {"part": "life"}) in log.events
        state = await store_.call(store.get_inner_state)
        assert state["last_step_at"] == clock.now()  # stepped at the earlier time
        await part.stop(ctx)
    finally:
        await store_.close()
