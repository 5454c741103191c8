"""`anima run --dir` as a real process: serves a directory, a SIGHUP adds a companion made by `anima init --dir`."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.store import connect
from engine.store.core import daemon_state
from tests.conftest import NotifyListener, run_anima, write_config

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parent.parent


def _wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} not within {timeout} s")


def _beats(path: Path) -> int:
    conn = connect(path, readonly=True)
    try:
        state = daemon_state(conn)
        return int(state["beats"]) if state else 0
    finally:
        conn.close()


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: Path):
        super().__init__("localhost", timeout=10)
        self.unix_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


def _get(sock_path: Path, path: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    conn = _UnixHTTP(sock_path)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _init(config: Path, folder: Path, handle: str) -> None:
    made = run_anima("--config", str(config), "init", "--dir", str(folder), "--id", handle, "--name", handle.upper(),
                     "--birth", "1998-04-12 09:30", "--json")
    assert made.code == 0, made.err
    assert json.loads(made.out)["handle"] == handle


def test_run_dir_serves_the_directory_and_sighup_adds_a_companion(tmp_path: Path) -> None:
    folder = tmp_path / "companions"
    folder.mkdir()
    config = write_config(tmp_path / "config.toml", extra="[daemon]\nwatch_s = 0.0\nbeat_s = 1.0\n")  # SIGHUP only
    _init(config, folder, "a1")
    again = run_anima("--config", str(config), "init", "--dir", str(folder), "--id", "a1", "--name", "X",
                      "--birth", "1998-04-12 09:30")
    assert again.code == 2 and "already exists" in again.err
    notify = NotifyListener(tmp_path / "notify.sock")
    log_path = tmp_path / "host.log"
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "run", "--dir", str(folder)],
                                stdout=log_file, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                                env={**os.environ, "NOTIFY_SOCKET": str(notify.path)})
    try:
        notify.wait_for("READY=1", 60)
        _wait_for(lambda: _beats(folder / "a1.db") >= 1, 10, "a1's first beat")
        _init(config, folder, "b2")
        seen = _beats(folder / "a1.db")
        _wait_for(lambda: _beats(folder / "a1.db") >= seen + 1, 10, "another beat of a1")
        assert _beats(folder / "b2.db") == 0  # not picked up without the watch
        proc.send_signal(signal.SIGHUP)
        _wait_for(lambda: _beats(folder / "b2.db") >= 1, 15, "b2's beats after SIGHUP")
        sock_path = folder / "anima.sock"
        status, listing = _get(sock_path, "/v1/companions")
        assert status == 200 and [c["handle"] for c in listing["companions"] if c["served"]] == ["a1", "b2"]
        status, health = _get(sock_path, "/v1/companions/b2/health")
        assert status == 200 and health["alive"] is True
        assert _get(sock_path, "/v1/companions/zz/health")[0] == 404
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        notify.close()
    text = log_path.read_text()
    assert "companion=b2" in text and "host.rescanned" in text
    for handle in ("a1", "b2"):
        conn = connect(folder / f"{handle}.db", readonly=True)
        try:
            assert daemon_state(conn)["stopped_at"] is not None  # both stopped cleanly
        finally:
            conn.close()
