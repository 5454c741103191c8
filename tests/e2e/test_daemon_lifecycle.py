"""The daemon as a real process: READY, watchdog at the heartbeat rate, status, lock, SIGTERM, gap on restart."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest

from engine.store import connect
from tests.conftest import run_anima, write_config

pytestmark = pytest.mark.e2e


def _wait_for_log(daemon, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = daemon.log_text()
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} not logged within {timeout} s:\n{daemon.log_text()[-2000:]}")


def test_daemon_lifecycle_ready_watchdog_lock_sigterm_and_gap(tmp_path: Path, start_daemon) -> None:
    db = tmp_path / "her.db"
    clock_file = tmp_path / "clock-offset"
    clock_file.write_text("0")
    env = {"ANIMA_TEST_CLOCK_FILE": str(clock_file)}
    daemon = start_daemon(db, env=env)

    # WATCHDOG=1 arrives at the heartbeat rate (1 s in the test config).
    stamps = [daemon.notify.wait_for("WATCHDOG=1", 10)[0] for _ in range(4)]
    intervals = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert 0.5 <= statistics.median(intervals) <= 2.0

    status = run_anima("--config", str(tmp_path / "config.toml"), "--db", str(db), "status", "--json")
    assert status.code == 0, status.err
    report = json.loads(status.out)
    assert report["daemon"]["alive"] is True
    assert report["daemon"]["pid"] == daemon.proc.pid
    assert report["sqlite_driver"].split()[0] in ("sqlite3", "pysqlite3")

    second = run_anima("--config", str(tmp_path / "config.toml"), "--db", str(db), "run", env=env)
    assert second.code == 2
    assert "already used by another anima daemon" in second.err
    assert second.err.count("\n") == 1  # one line, no traceback

    started = time.monotonic()
    assert daemon.stop(timeout=10) == 0
    assert time.monotonic() - started < 10
    assert any("STOPPING=1" in m for _, m in daemon.notify.messages) or daemon.notify.wait_for("STOPPING=1", 1)
    log = daemon.log_text()
    assert "event=daemon.ready" in log and "event=daemon.stopped" in log

    # Two hours of her time pass while the daemon is down.
    down_started = time.monotonic()
    clock_file.write_text("7200")
    restarted = start_daemon(db, env=env)
    real_downtime = time.monotonic() - down_started
    restarted.stop()
    conn = connect(db)
    gaps = [json.loads(r[0]) for r in conn.execute("SELECT detail_json FROM event_log WHERE kind = 'gap'")]
    assert len(gaps) == 1
    assert 7200 <= gaps[0]["seconds"] <= 7200 + real_downtime + 5
    assert gaps[0]["clean_stop"] is True


def test_control_change_is_seen_by_the_running_daemon_within_a_beat(tmp_path: Path, start_daemon) -> None:
    db = tmp_path / "her.db"
    config = write_config(tmp_path / "config.toml")
    daemon = start_daemon(db, config=config)
    result = run_anima("--config", str(config), "--db", str(db), "control", "set", "memory_hybrid", "off")
    assert result.code == 0, result.err
    line = _wait_for_log(daemon, "event=control.changed", timeout=5)
    assert "key=memory_hybrid old=true new=false" in line
    assert daemon.stop() == 0


def test_sighup_reloads_config(tmp_path: Path, start_daemon) -> None:
    db = tmp_path / "her.db"
    config = write_config(tmp_path / "config.toml")
    daemon = start_daemon(db, config=config)
    config.write_text('[heartbeat]\ninterval_s = 2.0\n[log]\nlevel = "debug"\n')
    daemon.proc.send_signal(1)
    _wait_for_log(daemon, "event=config.reloaded", timeout=5)
    assert "heartbeat_s=2.0" in daemon.log_text()
    assert daemon.proc.poll() is None
    assert daemon.stop() == 0


def test_journald_lines_carry_priority_prefixes(tmp_path: Path, start_daemon) -> None:
    db = tmp_path / "her.db"
    daemon = start_daemon(db, env={"JOURNAL_STREAM": "8:1234"})
    assert daemon.stop() == 0
    lines = [line for line in daemon.log_text().splitlines() if "event=" in line]
    assert lines and all(line.startswith("<") for line in lines)
    assert any(line.startswith("<6>event=daemon.ready") for line in lines)
