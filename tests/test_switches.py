"""Switches: one typed value from the registry, the old name "heartbeat" as an alias of "mood_step", one change event."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from daemon.cli import main
from daemon.clock import FakeClock
from engine import control
from engine.companion import create_companion
from engine.errors import InputError
from engine.inner import resume_after_gap, step_inner
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store import life as life_store
from engine.store.core import controls, events, get_companion, read_switches, set_control, stored_controls
from engine.usecases.switches import change_switch, reset_switch
from tests.api_support import T0, ApiHarness, make_database, running_daemon

START = datetime(2025, 3, 3, 6, 0, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    c = connect(tmp_path / "anima.db")
    migrate(c, now=START)
    create_companion(c, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2, now=START)
    yield c
    c.close()


def _rows(conn: Any) -> dict[str, Any]:
    return {r["key"]: json.loads(r["value_json"]) for r in conn.execute("SELECT key, value_json FROM life_control")}


# --- the typed value -----------------------------------------------------------------------------


def test_switches_fields_are_exactly_the_registry_keys_with_their_types() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(control.Switches)}
    assert list(fields) == list(control.REGISTRY)
    assert {name: spec.type.__name__ for name, spec in control.REGISTRY.items()} == fields


def test_defaults_come_from_the_registry_and_nothing_set_means_defaults(conn: Any) -> None:
    assert control.Switches.defaults().as_dict() == {n: s.default for n, s in control.REGISTRY.items()}
    assert read_switches(conn) == control.Switches.defaults()


def test_a_stored_value_replaces_its_default_and_the_value_is_frozen(conn: Any) -> None:
    set_control(conn, "sharing", False, START)
    switches = read_switches(conn)
    assert switches.sharing is False and switches.memory_search is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        switches.sharing = True  # type: ignore[misc]


def test_a_wrongly_typed_value_is_refused_and_nothing_is_written(conn: Any) -> None:
    with pytest.raises(InputError, match="takes true or false"):
        change_switch(conn, "life", "off", START, actor="api")
    assert _rows(conn) == {}


# --- the old name --------------------------------------------------------------------------------


def test_heartbeat_is_an_alias_of_mood_step() -> None:
    assert control.spec_of("heartbeat").name == "mood_step" and control.canonical("heartbeat") == "mood_step"
    assert control.parse_value("heartbeat", "off") is False
    assert "heartbeat" not in control.REGISTRY and not hasattr(control.Switches.defaults(), "heartbeat")


def test_setting_the_old_name_writes_the_new_row_and_records_the_alias(conn: Any) -> None:
    change = change_switch(conn, "heartbeat", False, START, actor="cli")
    assert (change.key, change.old, change.new, change.alias) == ("mood_step", True, False, "heartbeat")
    assert change.switches.mood_step is False
    assert _rows(conn) == {"mood_step": False}
    assert events(conn, "control")[-1]["detail"] == {"key": "mood_step", "old": True, "new": False, "actor": "cli",
                                                     "alias": "heartbeat"}


def test_the_current_name_wins_over_a_leftover_old_row_and_reset_removes_both(conn: Any) -> None:
    conn.execute("INSERT INTO life_control(key, value_json, updated_at) VALUES ('heartbeat', 'false', 0)")
    assert read_switches(conn).mood_step is False  # an old row alone still counts
    set_control(conn, "mood_step", True, START)
    assert read_switches(conn).mood_step is True and stored_controls(conn) == {"mood_step": True}
    reset_switch(conn, "heartbeat", START, actor="cli")
    assert _rows(conn) == {}


def test_migration_0013_moves_a_stored_heartbeat_row_to_mood_step(conn: Any) -> None:
    # As a file written before 0013 looks: the old key stored, 0013 not yet applied.
    conn.execute("INSERT INTO life_control(key, value_json, updated_at) VALUES ('heartbeat', 'false', 0)")
    conn.execute("DELETE FROM schema_migrations WHERE version = 13")
    assert migrate(conn, START) == [13]
    assert _rows(conn) == {"mood_step": False}
    assert read_switches(conn).mood_step is False


def test_unconverted_readers_still_see_the_old_name_in_the_legacy_view(conn: Any) -> None:
    """mood_step (once "heartbeat") off freezes her mood and energy as the old switch did."""
    persona = Persona.from_dict(get_companion(conn)["persona"])
    s = Settings()
    resume_after_gap(conn, s, persona, None, START)
    set_control(conn, "mood_step", False, START)
    assert controls(conn)["heartbeat"] is False and controls(conn)["mood_step"] is False
    before = life_store.get_inner_state(conn)
    for step in range(1, 13):
        step_inner(conn, s, persona, START + 300.0 * step, read_switches(conn))
    after = life_store.get_inner_state(conn)
    assert after["mood"]["pos"] == before["mood"]["pos"] and after["energy"]["s"] == before["energy"]["s"]


def test_cli_accepts_the_old_name_with_a_deprecation_note(db_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("ANIMA_CONFIG", raising=False)
    make_database(db_path)
    assert main(["--db", str(db_path), "control", "set", "heartbeat", "off", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"key": "mood_step", "old": True, "new": False}
    assert "heartbeat is now called mood_step" in err
    assert main(["--db", str(db_path), "control", "get", "heartbeat", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"key": "mood_step", "value": False}


# --- the API and the one change event ------------------------------------------------------------


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiHarness]:
    harness = await ApiHarness(tmp_path).start()
    yield harness
    await harness.stop()


async def test_api_put_of_the_old_name_answers_the_new_one_and_logs_one_change(api: ApiHarness) -> None:
    status, body = await api.call("PUT", "/v1/control/heartbeat", {"value": False})
    assert status == 200 and body == {"key": "mood_step", "old": True, "value": False}
    assert [(c["key"], c["new"], c["actor"], c["alias"]) for c in api.log.named("control.changed")] == [
        ("mood_step", False, "api", "heartbeat")]
    assert api.log.named("control.deprecated")[-1]["key"] == "heartbeat"
    assert api.ctx is not None and api.ctx.switches.mood_step is False  # replaced, effective at once
    listed = (await api.call("GET", "/v1/control"))[1]["controls"]
    assert [c["key"] for c in listed] == list(control.REGISTRY)
    state = (await api.call("GET", "/v1/state"))[1]
    assert state["controls"]["mood_step"] is False and "heartbeat" not in state["controls"]


async def test_api_unknown_key_is_404_and_writes_nothing(api: ApiHarness) -> None:
    status, _ = await api.call("PUT", "/v1/control/turbo", {"value": True})
    assert status == 404
    assert await api.db(_rows) == {}


async def test_the_daemon_logs_a_cli_change_under_an_old_name_as_changed_and_deprecated(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    clock = FakeClock(T0)
    async with running_daemon(db, clock) as (daemon, log):
        conn = connect(db)
        change_switch(conn, "heartbeat", False, T0, actor="cli")
        conn.close()
        clock.advance(15)
        await daemon.heartbeat()
        assert daemon.ctx is not None and daemon.ctx.switches.mood_step is False
        assert daemon.ctx.controls["heartbeat"] is False  # the legacy view for unconverted readers
    assert [(c["key"], c["new"], c["actor"]) for c in log.named("control.changed")] == [("mood_step", False, "cli")]
    assert [(d["key"], d["now"]) for d in log.named("control.deprecated")] == [("heartbeat", "mood_step")]
