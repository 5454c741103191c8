"""Shared fixtures: temp databases, an in-process CLI runner, and a real-daemon launcher for e2e tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# No per-example deadline anywhere: under load (CI's 2 cores, other processes) a 200 ms deadline
# fails equations that are correct; the properties, not the speed, are what these tests pin.
hypothesis_settings.register_profile("anima", deadline=None)
hypothesis_settings.load_profile("anima")

# One OpenMP thread per embedder: with several processes on 2 cores, OpenMP spinning makes each
# embedding 10-50x slower (measured while writing the consolidation tests).
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
SMALL_DISK_BYTES = 6 * 1024 * 1024  # the small_disk fixture's tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs mounted for the test, for disk-full tests (root only; skipped with the reason otherwise)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK_BYTES},mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({made.stderr.strip() or 'not root'}); disk full needs one")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill_disk(folder: Path, name: str = "filler") -> Path:
    """Write until ENOSPC: the filesystem is then full to the last block."""
    path = folder / name
    with open(path, "ab", buffering=0) as handle:
        for block in (65536, 4096, 512):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * block)
    return path


def unit_directives(unit: str) -> dict[str, list[str]]:
    """Each `Key=value` of systemd/<unit> (comments skipped), every value of a repeated key in order."""
    out: dict[str, list[str]] = {}
    for line in (REPO / "systemd" / unit).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


@pytest.fixture(autouse=True)
def _logging_left_as_found() -> Iterator[None]:
    """structlog's configuration is process-global: a test that configures it (an in-process CLI run, a
    host reload) binds the stream pytest captured for that test, which is closed once the test ends, and a
    later test logging through structlog's defaults then fails on a closed file. Put the defaults back."""
    yield
    import structlog

    if structlog.is_configured():
        structlog.reset_defaults()


SHARED = REPO.parent / "shared"
EVALDATA = SHARED / "evaldata"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "anima.db"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_anima(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
              timeout: float = 120) -> CliResult:
    """Run the real `anima` command in a subprocess (python -m daemon)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "daemon", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or REPO, timeout=timeout)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


class NotifyListener:
    """A datagram socket standing in for systemd's NOTIFY_SOCKET."""

    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.messages: list[tuple[float, str]] = []

    def wait_for(self, needle: str, timeout: float) -> tuple[float, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self.sock.recv(4096).decode()
            except TimeoutError:
                break
            stamp = (time.monotonic(), data)
            self.messages.append(stamp)
            if needle in data.split("\n"):
                return stamp
        raise AssertionError(f"no {needle!r} within {timeout} s; got {[m for _, m in self.messages][-5:]}")

    def close(self) -> None:
        self.sock.close()


@dataclass
class DaemonProcess:
    proc: subprocess.Popen[str]
    db: Path
    notify: NotifyListener
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 10) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(15)
        return self.proc.wait(timeout=timeout)


def write_config(path: Path, heartbeat_s: float = 1.0, extra: str = "") -> Path:
    path.write_text(f"[heartbeat]\ninterval_s = {heartbeat_s}\n[log]\nlevel = \"debug\"\n{extra}", encoding="utf-8")
    return path


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator:
    """Start real `anima run` processes; every one still running is killed at teardown."""
    started: list[DaemonProcess] = []
    counter = [0]

    def start(db: Path, *, config: Path | None = None, env: dict[str, str] | None = None,
              wait_ready: bool = True, timeout: float = 60) -> DaemonProcess:
        counter[0] += 1
        notify = NotifyListener(tmp_path / f"notify-{counter[0]}.sock")
        config = config or write_config(tmp_path / "config.toml")
        log_path = tmp_path / f"daemon-{counter[0]}.log"
        full_env = {**os.environ, "NOTIFY_SOCKET": str(notify.path), **(env or {})}
        log_file = open(log_path, "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                                stdout=log_file, stderr=subprocess.STDOUT, text=True, env=full_env, cwd=REPO)
        daemon = DaemonProcess(proc, db, notify, log_path)
        started.append(daemon)
        if wait_ready:
            try:
                notify.wait_for("READY=1", timeout)
            except AssertionError:
                raise AssertionError(f"daemon not ready; log:\n{daemon.log_text()[-3000:]}") from None
        return daemon

    yield start
    for daemon in started:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(timeout=10)
        daemon.notify.close()
