"""life_control through the CLI: round trip, validation, nothing written on a bad key or value."""

from __future__ import annotations

import json
from pathlib import Path

from engine.store import connect
from tests.conftest import run_anima


def _rows(db: Path) -> tuple[list, list]:
    conn = connect(db)
    controls = conn.execute("SELECT key, value_json FROM life_control").fetchall()
    events = conn.execute("SELECT kind, detail_json FROM event_log WHERE kind = 'control'").fetchall()
    return [tuple(r) for r in controls], [tuple(r) for r in events]


def test_set_get_round_trip_is_recorded_in_event_log(db_path: Path) -> None:
    assert run_anima("--db", str(db_path), "control", "set", "memory_hybrid", "off").code == 0
    got = run_anima("--db", str(db_path), "control", "get", "memory_hybrid", "--json")
    assert json.loads(got.out) == {"key": "memory_hybrid", "value": False}
    _, events = _rows(db_path)
    assert json.loads(events[-1][1]) | {} == {"key": "memory_hybrid", "old": True, "new": False, "actor": "cli"}


def test_list_shows_every_key_with_default(db_path: Path) -> None:
    listed = json.loads(run_anima("--db", str(db_path), "control", "list", "--json").out)
    keys = {row["key"] for row in listed}
    assert {"mood_step", "life", "memory_search", "memory_hybrid", "memory_reread", "consolidation"} <= keys


def test_unknown_key_exits_2_and_writes_nothing(db_path: Path) -> None:
    run_anima("--db", str(db_path), "control", "set", "life", "on")
    before = _rows(db_path)
    result = run_anima("--db", str(db_path), "control", "set", "memory_turbo", "on")
    assert result.code == 2
    assert "unknown control key 'memory_turbo'" in result.err
    assert _rows(db_path) == before


def test_bad_value_exits_2_and_writes_nothing(db_path: Path) -> None:
    run_anima("--db", str(db_path), "control", "set", "life", "on")
    before = _rows(db_path)
    result = run_anima("--db", str(db_path), "control", "set", "life", "maybe")
    assert result.code == 2
    assert "control life takes on/off" in result.err
    assert _rows(db_path) == before
