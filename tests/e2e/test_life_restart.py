"""Her life across a restart of the real process: one gap event, mood stepped analytically, nothing invented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import mood as mood_model
from engine.inner import mood_params
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect
from engine.store.core import get_companion

pytestmark = pytest.mark.e2e


def _state(db: Path) -> dict:
    conn = connect(db)
    try:
        return json.loads(conn.execute("SELECT state_json FROM mood_state WHERE id = 1").fetchone()[0])
    finally:
        conn.close()


def test_two_hours_down_gives_one_gap_analytic_mood_and_no_invented_life(tmp_path: Path, start_daemon) -> None:
    db = tmp_path / "her.db"
    clock_file = tmp_path / "clock-offset"
    clock_file.write_text("0")
    env = {"ANIMA_TEST_CLOCK_FILE": str(clock_file)}

    first = start_daemon(db, env=env)
    first.notify.wait_for("WATCHDOG=1", 10)
    assert first.stop() == 0

    # Something upset her just before the daemon went down: a fresh emotion on a low mood, written while stopped.
    conn = connect(db)
    raw = json.loads(conn.execute("SELECT state_json FROM mood_state WHERE id = 1").fetchone()[0])
    raw["mood"]["emotion"] = [-0.8, 0.3, -0.5]
    raw["mood"]["mood"] = [-0.3, 0.1, 0.0]
    conn.execute("UPDATE mood_state SET state_json = ? WHERE id = 1", (json.dumps(raw),))
    stopped_at = conn.execute("SELECT last_beat_at FROM daemon_state").fetchone()[0]
    life_before = conn.execute("SELECT count(*) FROM life_event").fetchone()[0]
    persona = Persona.from_dict(get_companion(conn)["persona"])
    conn.close()
    before = mood_model.Mood.from_dict(raw["mood"])

    clock_file.write_text("7200")
    second = start_daemon(db, env=env)
    second.notify.wait_for("WATCHDOG=1", 10)
    assert second.stop() == 0

    after_raw = _state(db)
    after = mood_model.Mood.from_dict(after_raw["mood"])
    assert after.at >= stopped_at + 7200
    params = mood_params(Settings(), persona)
    expected = mood_model.relax(before, after.at, params)
    for got, want in zip(after.emotion + after.mood, expected.emotion + expected.mood, strict=True):
        assert got == pytest.approx(want, abs=1e-9)
    # Two hours: the emotion (minutes) is gone, and part of it has become mood (hours), which lasts.
    assert abs(after.emotion[0]) < 0.02 and after.mood[0] < -0.3

    conn = connect(db)
    gaps = conn.execute("SELECT detail_json FROM event_log WHERE kind = 'gap'").fetchall()
    assert len(gaps) == 1  # the first start had no previous beat; the restart has one gap
    assert json.loads(gaps[-1][0])["seconds"] >= 7200
    inside = conn.execute(
        "SELECT count(*) FROM life_event WHERE ts > ? AND ts < ?", (stopped_at + 1, stopped_at + 7200)
    ).fetchone()[0]
    assert inside == 0
    assert conn.execute("SELECT count(*) FROM life_event").fetchone()[0] >= life_before
    conn.close()
