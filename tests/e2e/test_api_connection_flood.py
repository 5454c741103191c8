"""A real daemon at a 1024 file limit under 1,100 idle connections still answers /v1/health at once, with a quiet log.

Before the connection gate (daemon/api/gate.py) this flood made every request time out and wrote
hundreds of thousands of accept() tracebacks (issue 11). The daemon runs as `python -m daemon run`
with RLIMIT_NOFILE set in the child only; the idle clients are plain non-blocking sockets held by
this test, all closed before it ends.
"""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.e2e

IDLE = 1100
NOFILE = 1024
HEALTH = b"GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"


def ask(path: str, timeout: float) -> tuple[int, float]:
    started = time.monotonic()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(HEALTH)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), time.monotonic() - started


def open_idle(path: str, n: int, within_s: float) -> list[socket.socket]:
    """n connected sockets that never send. A Unix socket's non-blocking connect() fails with EAGAIN while
    the backlog is full (it is not 'in progress' as on TCP), so each is retried until there is room."""
    pending = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(n)]
    connected = []
    deadline = time.monotonic() + within_s
    for sock in pending:
        sock.setblocking(False)
    while pending and time.monotonic() < deadline:
        waiting = []
        for sock in pending:
            try:
                sock.connect(path)
            except OSError:
                waiting.append(sock)
            else:
                connected.append(sock)
        pending = waiting
        if pending:
            time.sleep(0.005)
    for sock in pending:
        sock.close()
    return connected


def wait_for_socket(path: str, proc: subprocess.Popen[bytes], log: Path, limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        try:
            if ask(path, 2.0)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("daemon never answered /v1/health")


def test_idle_flood_at_the_fd_limit_leaves_health_answering_and_the_log_small(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < IDLE + 128:
        pytest.skip(f"this test holds {IDLE} sockets; the hard fd limit here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, IDLE + 128), hard))
    try:
        run_flood(tmp_path)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def run_flood(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[heartbeat]\ninterval_s = 3600\n[log]\nlevel = "info"\n', encoding="utf-8")
    log_path = tmp_path / "daemon.log"
    sock_path = str(tmp_path / "anima.db.sock")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    held: list[socket.socket] = []
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db",
                                 str(tmp_path / "anima.db"), "run"], stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                preexec_fn=limit)
    try:
        wait_for_socket(sock_path, proc, log_path)
        held.extend(open_idle(sock_path, IDLE, within_s=10.0))
        assert len(held) == IDLE  # every client got in (the daemon accepts, and closes the oldest idle ones)
        time.sleep(1.0)  # let the daemon take the flood before asking
        status, seconds = ask(sock_path, 5.0)
        assert status == 200 and seconds < 1.0, (status, seconds)
        assert proc.poll() is None
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        code = proc.wait(timeout=20)
    text = log_path.read_text(errors="replace")
    assert code == 0
    assert log_path.stat().st_size < 1_000_000 and "Traceback" not in text
    assert "api.failed" not in text
