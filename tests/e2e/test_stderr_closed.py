"""The daemon outlives the reader of its stderr: `anima run 2>&1 | head` must not stop her.

Issue 25 (defect 11): the first log line after the pipe closed raised BrokenPipeError, which the CLI
maps to exit 0 (right for `anima status | head`, wrong for the daemon): she died mid-start-up with a
stale socket and an unclean stop, and a supervisor that restarts on failure left her down.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, write_config
from tests.e2e.test_ops_process import _short_socket, health

pytestmark = pytest.mark.e2e


def wait_for_health(sock: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the daemon exited with {proc.returncode}"
        try:
            return health(sock)
        except (OSError, AssertionError):
            time.sleep(0.1)
    raise AssertionError("the daemon never answered /v1/health")


def test_a_closed_stderr_pipe_leaves_the_daemon_beating_and_stopping_cleanly(tmp_path: Path) -> None:
    db = tmp_path / "anima.db"
    sock = _short_socket()
    config = write_config(tmp_path / "config.toml", heartbeat_s=1.0, extra=f"[api]\nsocket_path = \"{sock}\"\n")
    proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # `| head -1`: one line read, then the reader goes away
        assert first.startswith(b"event=")
        proc.stdout.close()
        before = wait_for_health(sock, proc)
        while True:  # beats go on after the pipe closed: the last beat moves
            now = wait_for_health(sock, proc)
            if now["last_beat_at"] != before["last_beat_at"] and now["last_beat_at"] is not None:
                break
            time.sleep(0.05)
        assert now["alive"] is True
        proc.send_signal(15)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert not Path(sock).exists()  # a clean stop removes its socket
    conn = sqlite3.connect(db)
    try:
        stopped_at = conn.execute("SELECT stopped_at FROM daemon_state WHERE id = 1").fetchone()[0]
    finally:
        conn.close()
    assert stopped_at is not None
