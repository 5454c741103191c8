"""The real daemon as an operator meets it: a stepped wall clock, SIGHUP, journald priorities, the watchdog check."""

from __future__ import annotations

import json
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from daemon.app import prepare_database
from engine.settings import Settings
from engine.store import connect
from tests.api_support import RecordingLog
from tests.conftest import run_anima, write_config

pytestmark = pytest.mark.e2e
DAY = 86400


def health(sock_path: str) -> dict[str, Any]:
    """GET /v1/health over the Unix socket with nothing but the stdlib."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(sock_path)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: anima\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    return dict(json.loads(body))


def _wait_for_log(daemon: Any, needle: str, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = str(daemon.log_text())
        if needle in text:
            return text
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} not logged within {timeout} s:\n{daemon.log_text()[-2000:]}")


def _short_socket() -> str:
    return str(Path(tempfile.mkdtemp(prefix="ao-", dir="/tmp")) / "a.sock")


def test_a_day_set_back_keeps_beats_and_watchdog_coming(tmp_path: Path, start_daemon: Any) -> None:
    db = tmp_path / "her.db"
    offset = tmp_path / "clock-offset"
    offset.write_text("0")
    sock = _short_socket()
    config = write_config(tmp_path / "config.toml", extra=f'[api]\nsocket_path = "{sock}"\n')
    env = {"ANIMA_TEST_CLOCK_FILE": str(offset)}
    daemon = start_daemon(db, config=config, env=env)
    daemon.notify.wait_for("WATCHDOG=1", 10)

    offset.write_text(str(-DAY))  # the wall clock is set back one day under the running daemon
    pings = [daemon.notify.wait_for("WATCHDOG=1", 10)[0] for _ in range(3)]  # 1 s beats keep coming
    assert len(pings) == 3
    log = _wait_for_log(daemon, "event=clock.stepped")
    line = next(ln for ln in log.splitlines() if "event=clock.stepped" in ln)
    step_s = float(line.split("step_s=", 1)[1].split()[0])
    assert "level=warning" in line and abs(step_s + DAY) < 5, line  # -86400, give or take the beat's own time
    report = health(sock)
    assert report["alive"] is True and report["last_beat_age_s"] < 3  # truthful: it did beat just now
    doctor = run_anima("--config", str(config), "--db", str(db), "doctor", "--json", env=env)
    checks = {c["check"]: c for c in json.loads(doctor.out)["checks"]}
    assert checks["socket"]["status"] == "ok" and "answers: alive," in checks["socket"]["detail"]
    assert checks["clock"]["status"] == "warn" and "1 wall-clock step(s)" in checks["clock"]["detail"]
    assert daemon.stop() == 0


def test_a_start_after_the_clock_was_set_back_logs_and_records_it(tmp_path: Path, start_daemon: Any) -> None:
    db = tmp_path / "her.db"
    prepare_database(db, Settings(), time.time(), RecordingLog())  # she last beat "now", then stopped
    conn = connect(db)
    conn.execute("UPDATE daemon_state SET stopped_at = last_beat_at")
    conn.close()
    offset = tmp_path / "clock-offset"
    offset.write_text(str(-DAY))  # and the wall clock is a day earlier when she starts again
    daemon = start_daemon(db, env={"ANIMA_TEST_CLOCK_FILE": str(offset)})
    line = next(ln for ln in _wait_for_log(daemon, "event=clock.backwards").splitlines() if "clock.backwards" in ln)
    assert "level=warning" in line and "at=start" in line
    assert daemon.stop() == 0
    conn = connect(db)
    try:
        back = [json.loads(r[0]) for r in conn.execute("SELECT detail_json FROM event_log WHERE kind='clock_backwards'")]
        gap = json.loads(conn.execute("SELECT detail_json FROM event_log WHERE kind='gap' ORDER BY id DESC").fetchone()[0])
    finally:
        conn.close()
    assert len(back) == 1 and DAY - 60 <= back[0]["seconds"] <= DAY
    assert DAY - 60 <= gap["backwards_s"] <= DAY and gap["seconds"] == 0


def test_sighup_applies_the_log_format_and_names_what_needs_a_restart(tmp_path: Path, start_daemon: Any) -> None:
    db = tmp_path / "her.db"
    sock = _short_socket()
    config = write_config(tmp_path / "config.toml", extra=f'[api]\nsocket_path = "{sock}"\n')
    daemon = start_daemon(db, config=config)
    daemon.notify.wait_for("WATCHDOG=1", 10)
    config.write_text(f'[heartbeat]\ninterval_s = 1.0\n[log]\nlevel = "debug"\nformat = "json"\n'
                      f'[api]\nsocket_path = "{sock}"\nsocket_mode = "0600"\n[memory]\nk = 3\n')
    daemon.proc.send_signal(signal.SIGHUP)
    _wait_for_log(daemon, '"event": "config.reloaded"')
    daemon.notify.wait_for("WATCHDOG=1", 10)
    daemon.notify.wait_for("WATCHDOG=1", 10)
    lines = daemon.log_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if '"event": "config.reloaded"' in ln)
    reloaded = json.loads(lines[start])
    assert "memory.k" in reloaded["applied"] and "log.format" in reloaded["applied"]
    after = [json.loads(ln) for ln in lines[start:] if ln.startswith("{")]
    restart = next(e for e in after if e["event"] == "config.deferred")
    assert restart["keys"] == ["api.socket_mode"] and restart["level"] == "warning"
    assert any(e["event"] == "heartbeat.done" for e in after)  # later lines, from bound loggers, are JSON
    assert not any(ln.startswith("event=") for ln in lines[start:])
    assert daemon.stop() == 0


def test_fatal_start_errors_carry_a_journald_priority_and_a_tight_watchdog_is_refused(tmp_path: Path) -> None:
    journal = {"JOURNAL_STREAM": "8:12345"}
    bad = tmp_path / "bad.toml"
    bad.write_text("[heartbeat]\ninterval_s = 0\n")
    result = run_anima("--config", str(bad), "--db", str(tmp_path / "a.db"), "run", env=journal)
    assert result.code == 2 and result.err.startswith("<3>anima: ") and result.err.count("\n") == 1

    tight = write_config(tmp_path / "tight.toml", heartbeat_s=120)
    env = {**journal, "WATCHDOG_USEC": "60000000", "WATCHDOG_PID": ""}
    result = run_anima("--config", str(tight), "--db", str(tmp_path / "b.db"), "run", env=env)
    assert result.code == 2, result.err
    assert result.err.startswith("<3>anima: [heartbeat] interval_s = 120 is too long for the systemd watchdog")
    assert result.err.count("\n") == 1
    assert not (tmp_path / "b.db").exists()
