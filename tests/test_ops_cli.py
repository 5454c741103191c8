"""Operator commands and plumbing in-process: doctor, config show, control reset, mood --json, the write log, reload."""

from __future__ import annotations

import dataclasses
import errno
import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from daemon import logs
from daemon.cli import main
from daemon.cli.cmd_doctor import _seconds, check_units
from daemon.cli.env import CliEnv
from daemon.clock import FakeClock
from daemon.config import live_reload, needs_restart
from engine.errors import ConfigError
from engine.settings import HeartbeatSettings, MemorySettings, Settings
from engine.store import connect, oplog
from engine.store import life as life_store
from engine.store.core import events, set_control, stored_controls
from tests.api_support import T0, make_database, running_daemon
from tests.conftest import run_anima


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    config = tmp_path / "config.toml"
    config.write_text("[memory]\nk = 4\n")
    monkeypatch.setenv("ANIMA_CONFIG", str(config))
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    monkeypatch.delenv("ANIMA_TEST_CLOCK_FILE", raising=False)
    db = tmp_path / "her.db"
    make_database(db, time.time())

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["--db", str(db), *argv])
        out, err = capsys.readouterr()
        return code, out, err

    run.db = db  # type: ignore[attr-defined]
    return run


def test_control_reset_returns_a_switch_to_its_default_and_records_it(cli: Any) -> None:
    assert cli("control", "set", "sharing", "off")[0] == 0
    code, out, _ = cli("control", "reset", "sharing", "--json")
    assert code == 0 and json.loads(out) == {"key": "sharing", "old": False, "new": True}
    conn = connect(cli.db)
    try:
        assert "sharing" not in stored_controls(conn)
        last = events(conn, "control")[-1]["detail"]
    finally:
        conn.close()
    assert last["reset"] is True and last["old"] is False and last["new"] is True and last["actor"] == "cli"
    code, _, err = cli("control", "reset", "no_such_switch")
    assert code == 2 and err.startswith("anima: unknown control key 'no_such_switch'")


def test_mood_json_gives_numbers_and_kinds_only(cli: Any) -> None:
    conn = connect(cli.db)
    now = time.time()
    life_store.put_trace_point(conn, now - 600, 0.1, -0.2, 0.05, 0.7, "reading")
    life_store.put_trace_point(conn, now - 300, 0.2, -0.1, 0.0, 0.6, "reading")
    conn.close()
    code, out, _ = cli("mood", "--json")
    report = json.loads(out)
    assert code == 0 and [p["v"] for p in report["points"]] == [0.1, 0.2]
    assert report["latest"] == {"ts": pytest.approx(now - 300), "v": 0.2, "a": -0.1, "d": 0.0, "e": 0.6}
    assert set(report) == {"since", "until", "points", "latest", "activities"}


def test_config_show_names_the_source_of_each_setting(cli: Any, tmp_path: Path) -> None:
    code, out, _ = cli("config", "show", "--json")
    report = json.loads(out)
    rows = {r["key"]: r for r in report["settings"]}
    assert code == 0 and report["config_file"] == str(tmp_path / "config.toml") and report["found_by"] == "$ANIMA_CONFIG"
    assert rows["memory.k"]["value"] == 4 and rows["memory.k"]["source"] == str(tmp_path / "config.toml")
    assert rows["memory.min_score"]["source"] == "default"
    assert rows["database.path"] == {"key": "database.path", "value": str(cli.db), "source": "--db",
                                     "restart_needed": True}
    code, out, _ = cli("config", "show")
    assert code == 0 and "memory.k" in out and "# default" in out


def test_doctor_passes_a_sound_file_and_fails_a_damaged_one(cli: Any) -> None:
    code, out, _ = cli("doctor", "--json")
    report = json.loads(out)
    by_name = {c["check"]: c for c in report["checks"]}
    assert code == 0 and report["ok"] is True
    assert by_name["integrity"]["status"] == "ok" and by_name["schema"]["status"] == "ok"
    assert by_name["lock"]["status"] == "ok" and by_name["clock"]["status"] == "ok"
    os.chmod(cli.db, 0o644)
    code, out, _ = cli("doctor", "--json")
    assert json.loads(out)["checks"][1]["status"] == "warn" and "0644" in json.loads(out)["checks"][1]["detail"]
    # Damage the pages of the second half of the file (the schema on page 1 stays readable):
    # quick_check sees it, doctor exits 1.
    conn = connect(cli.db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    with open(cli.db, "r+b") as f:
        for n in range(pages // 2, pages):
            f.seek(page * n + 8)
            f.write(b"\xff" * (page - 16))
    code, out, _ = cli("doctor")
    assert code == 1 and "check(s) failed" in out


def test_doctor_reads_installed_units_against_the_heartbeat(tmp_path: Path) -> None:
    units = tmp_path / "units"
    units.mkdir()
    (units / "anima.service").write_text("[Service]\nWatchdogSec=20s\nEnvironment=OMP_NUM_THREADS=1\n")
    (units / "anima@.service").write_text("[Service]\nWatchdogSec=2min\nRestartPreventExitStatus=2\n")
    env = CliEnv(settings=Settings(), config_file=None, db_path=tmp_path / "x.db", clock=FakeClock(T0))
    checks = {c["check"]: c for c in check_units(env, (units,))}
    bad = checks["unit anima.service"]
    assert bad["status"] == "warn" and "shorter than two heartbeats" in bad["detail"]
    assert "RestartPreventExitStatus=2" in bad["detail"] and "OMP_NUM_THREADS" in bad["detail"]
    assert checks["unit anima@.service"]["status"] == "ok"
    assert _seconds("1min 30s") == 90 and _seconds("60") == 60 and _seconds("5fortnights") is None


async def test_the_daemon_logs_each_recorded_write_once_even_a_change_and_its_undo(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    clock = FakeClock(T0)
    async with running_daemon(db, clock) as (daemon, log):
        conn = connect(db)
        set_control(conn, "memory_hybrid", False, T0, actor="cli")
        set_control(conn, "memory_hybrid", True, T0, actor="cli")  # undone before the next beat
        set_control(conn, "sharing", False, T0, actor="api")  # the API logged this one itself
        oplog.record_write(conn, T0, "ingest", actor="cli", turns=3, messages=6, new_memories=6, vectors_pending=0)
        conn.close()
        clock.advance(15)
        await daemon.heartbeat()
        clock.advance(15)
        await daemon.heartbeat()  # nothing new: nothing logged twice
    changed = log.named("control.changed")
    assert [(c["key"], c["old"], c["new"], c["actor"]) for c in changed] == [
        ("memory_hybrid", True, False, "cli"), ("memory_hybrid", False, True, "cli")]
    assert [e["turns"] for e in log.named("history.ingested")] == [3]


def test_live_reload_applies_what_it_can_and_names_the_rest() -> None:
    running = Settings()
    fresh = dataclasses.replace(running, memory=MemorySettings(k=3, embedding_threads=2),
                                heartbeat=HeartbeatSettings(interval_s=5))
    merged, applied, restart = live_reload(running, fresh)
    assert applied == ["heartbeat.interval_s", "memory.k"] and restart == ["memory.embedding_threads"]
    assert merged.memory.k == 3 and merged.heartbeat.interval_s == 5
    assert merged.memory.embedding_threads == running.memory.embedding_threads  # kept as it runs
    assert needs_restart("api.socket_path") and not needs_restart("mood.loss_aversion")


def test_reconfiguring_reaches_loggers_bound_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    buf = io.StringIO()
    logs.configure_logging("kv", "info", stream=buf)
    bound = logs.get_logger(part="x")
    bound.info("first.logged", n=1)
    logs.configure_logging("json", "warning", stream=buf)
    bound.info("dropped.now", n=2)
    bound.warning("second.logged", n=3)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("event=first.logged")
    assert len(lines) == 2 and json.loads(lines[1])["event"] == "second.logged"
    monkeypatch.setenv("JOURNAL_STREAM", "8:1")
    assert logs.fatal_line("bad") == "<3>anima: bad"
    logs.configure_logging("kv", "info")


def test_socket_group_outside_the_user_namespace_is_a_config_error(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.api import listen

    def unmapped(*_: Any, **__: Any) -> None:  # what chown gives under PrivateUsers=yes for an unmapped group
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(shutil, "chown", unmapped)
    sock = Path("/tmp") / f"ops-{os.getpid()}.sock"
    with pytest.raises(ConfigError, match="not mapped into this process's user namespace"):
        listen.bind_unix(sock, "0660", "chat")
    assert not sock.exists()


def test_a_refused_priority_change_is_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon import index_queue

    def refused(*_: Any) -> None:  # what the unit's old seccomp filter did to both calls
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refused)
    monkeypatch.setattr(os, "setpriority", refused)
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    buf = io.StringIO()
    logs.configure_logging("kv", "info", stream=buf)
    try:
        index_queue._lower_priority()
    finally:
        logs.configure_logging("kv", "info")
    assert "event=indexer.priority_refused" in buf.getvalue() and "level=warning" in buf.getvalue()


async def test_writes_made_while_the_daemon_was_down_are_logged_once_at_its_next_start(
        cli: Any, tmp_path: Path) -> None:
    code, out, _ = cli("life", "add", "a secret afternoon", "--json")  # untold: its text must never be logged
    assert code == 0
    event_id = json.loads(out)["id"]
    conn = connect(cli.db)
    recorded = events(conn, "life_add")
    conn.close()
    assert [e["detail"] for e in recorded] == [{"actor": "cli", "life_event_id": event_id, "told": False}]

    clock = FakeClock(time.time())
    for run in range(2):  # the first start logs it; a clean stop and a second start do not repeat it
        async with running_daemon(cli.db, clock) as (daemon, log):
            clock.advance(15)
            await daemon.heartbeat()
        added = log.named("life.added")
        assert added == ([{"event_id": recorded[0]["id"], "actor": "cli", "life_event_id": event_id, "told": False}]
                         if run == 0 else [])
        assert "secret" not in log.text()


def test_version_names_the_installed_release() -> None:
    from importlib.metadata import version

    done = run_anima("--version")
    assert done.code == 0 and done.out.strip() == f"anima {version('anima')}"


def test_human_status_prints_words_not_python_values() -> None:
    """Issue 25: None and False reached human output (an unplanned next activity, a doctor verdict)."""
    from daemon.cli.cmd_status import render

    report = {
        "companion": {"name": "小安", "birth": "1998-04-12 09:30", "tz": "Asia/Shanghai",
                      "pillars": {"year": "戊寅", "month": "丙辰", "day": "己丑", "time": "己巳"}, "day_master": None},
        "daemon": {"alive": True, "locked": True, "pid": 7, "uptime_s": None, "seconds_since_beat": 1.0,
                   "beat_s": 15.0, "loop_lag_ms": None, "served_by": "file"},
        "inner": {"mood": {"label": "calm", "v": 0.0, "a": 0.0, "d": 0.0}, "energy": 0.5,
                  "activity": {"label": "读书", "since": "s", "until": "u", "why": None, "next": None}},
        "jobs": {}, "schema": {"db": 16, "code": 16}, "sqlite_driver": "sqlite3",
        "controls": {"sharing": False, "life": True},
    }
    text = render(report)
    assert not any(word in text.split() or f"{word})" in text or f"{word};" in text
                   for word in ("None", "False", "True")), text
    assert "sharing=off" in text and "not planned yet" in text
