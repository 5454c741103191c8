"""Helpers for the many-mode end-to-end tests: a companions directory, a real `anima run --dir`, a scoped client.

A directory of companions is made once per test module by the `anima init --dir DIR --id HANDLE` command
line (in this process: 20 processes would cost ~20 s of imports) and copied into each test's own directory:
every test starts from files made by the operator's command, without paying for 20 of them each time.
`ManyDaemon` is one real `python -m daemon --config CFG run --dir DIR` process with a NOTIFY_SOCKET
listener and its log in a file; the socket lives under a short /tmp directory (Unix socket paths are
limited to 107 bytes, pytest's tmp paths are long). `ManyClient` talks HTTP over that socket, to
/v1/companions/{handle}/... with an optional bearer token. Reading a file back (`stored_turns`) opens it
read-only, so the tests can check the ground truth without taking the daemon's lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import aiohttp

from engine.store import connect
from tests.conftest import REPO, NotifyListener

CST = timezone(timedelta(hours=8))


def handles(count: int) -> list[str]:
    return [f"c{n:02d}" for n in range(1, count + 1)]


def init_command(config: Path, folder: Path, handle: str) -> list[str]:
    number = int(handle[1:]) if handle[1:].isdigit() else 0
    return [sys.executable, "-m", "daemon", "--config", str(config), "init", "--dir", str(folder), "--id", handle,
            "--name", f"小安{number:02d}", "--birth", f"1998-04-{1 + number % 28:02d} 09:30", "--tz", "Asia/Shanghai"]


def init_companions(config: Path, folder: Path, names: Iterable[str]) -> None:
    """Create each companion with the `anima init --dir DIR --id HANDLE` command line, run in this process.

    The same parser and handler as the real command (daemon.cli.main), without paying ~1 s of imports for
    each of 20 processes on 2 loaded cores; the runtime test still runs the real process on a live host.
    """
    from daemon.cli import main

    for handle in names:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(init_command(config, folder, handle)[3:])
        assert code == 0 and f"{handle}.db" in out.getvalue(), (handle, code, out.getvalue())


def copy_companions(template: Path, dest: Path, names: Iterable[str] | None = None) -> Path:
    """Copy the template's companion files (all, or the named ones) into a fresh directory."""
    dest.mkdir(parents=True, exist_ok=True)
    wanted = None if names is None else set(names)
    for path in sorted(template.glob("*.db")):
        if wanted is None or path.stem in wanted:
            shutil.copy2(path, dest / path.name)
            for suffix in ("-wal", "-shm"):
                side = path.with_name(path.name + suffix)
                if side.exists():
                    shutil.copy2(side, dest / side.name)
    return dest


def short_socket_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="am-", dir="/tmp"))


def many_config(path: Path, socket_path: Path, *, heartbeat_s: float = 2.0, watch_s: float = 0.0,
                extra: str = "") -> Path:
    """A config for many mode: the socket named (short path), the directory watch as asked (0 = SIGHUP only)."""
    path.write_text(
        f"[heartbeat]\ninterval_s = {heartbeat_s}\n"
        f"[log]\nlevel = \"debug\"\n"
        f"[daemon]\nwatch_s = {watch_s}\nbeat_s = {heartbeat_s}\n"
        f"[api]\nsocket_path = \"{socket_path}\"\n{extra}",
        encoding="utf-8",
    )
    return path


@dataclass
class ManyDaemon:
    proc: subprocess.Popen[str]
    folder: Path
    socket_path: Path
    notify: NotifyListener
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def hup(self) -> None:
        self.proc.send_signal(signal.SIGHUP)

    def kill9(self) -> int:
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait(timeout=10)

    def stop(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)


class ManyLauncher:
    """Starts real `anima run --dir` processes; every one still running is killed at teardown."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.started: list[ManyDaemon] = []

    def start(self, folder: Path, config: Path, socket_path: Path, *, timeout: float = 60,
              env: dict[str, str] | None = None) -> ManyDaemon:
        number = len(self.started) + 1
        notify = NotifyListener(self.tmp_path / f"notify-many-{number}.sock")
        log_path = self.tmp_path / f"many-{number}.log"
        full_env = {**os.environ, "NOTIFY_SOCKET": str(notify.path), **(env or {})}
        with open(log_path, "w") as log_file:  # the child keeps its own descriptor
            proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "run", "--dir",
                                     str(folder)], stdout=log_file, stderr=subprocess.STDOUT, text=True,
                                    env=full_env, cwd=REPO)
        daemon = ManyDaemon(proc, folder, socket_path, notify, log_path)
        self.started.append(daemon)
        deadline = time.monotonic() + timeout
        while True:  # in slices, so a daemon that exits at start fails the test at once, not after `timeout`
            try:
                notify.wait_for("READY=1", min(1.0, max(0.01, deadline - time.monotonic())))
                return daemon
            except AssertionError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"many-mode daemon not ready (exit {proc.poll()}); log:\n"
                                         f"{daemon.log_text()[-3000:]}") from None

    def close(self) -> None:
        for daemon in self.started:
            if daemon.proc.poll() is None:
                daemon.proc.kill()
                daemon.proc.wait(timeout=10)
            daemon.notify.close()



def launcher(tmp_path: Path) -> Iterator[ManyLauncher]:
    """Body of the `start_many` fixture (the test module declares it)."""
    many = ManyLauncher(tmp_path)
    try:
        yield many
    finally:
        many.close()


class ManyClient:
    """HTTP over the daemon's Unix socket: scoped paths, an optional bearer token, JSON both ways."""

    def __init__(self, socket_path: Path, timeout_s: float = 30):
        self.socket_path = socket_path
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> ManyClient:
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(self.socket_path)),
                                             timeout=self.timeout)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.session is not None
        await self.session.close()

    async def call(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> tuple[int, Any]:
        assert self.session is not None
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        headers = {} if data is None else {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with self.session.request(method, "http://anima" + path, data=data, headers=headers) as resp:
            raw = await resp.read()
            try:
                return resp.status, json.loads(raw)
            except ValueError:
                return resp.status, raw.decode(errors="replace")

    async def to(self, handle: str, method: str, rest: str, body: Any = None, *,
                 token: str | None = None) -> tuple[int, Any]:
        """One call on a companion's scoped path: /v1/companions/{handle}{rest}."""
        return await self.call(method, f"/v1/companions/{handle}{rest}", body, token=token)

    async def listing(self) -> tuple[list[str], dict[str, str]]:
        status, body = await self.call("GET", "/v1/companions")
        assert status == 200, (status, body)
        return served_of(body), faulted_of(body)

    async def wait_listing(self, predicate: Callable[[list[str], dict[str, str]], bool], timeout: float,
                           what: str) -> tuple[list[str], dict[str, str]]:
        """Poll GET /v1/companions until `predicate(served, faulted)` holds (a scan is asynchronous)."""
        deadline = time.monotonic() + timeout
        served, faulted = await self.listing()
        while not predicate(served, faulted):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not seen within {timeout} s: served={served} faulted={faulted}")
            await asyncio.sleep(0.1)
            served, faulted = await self.listing()
        return served, faulted


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `predicate` until it holds: for what a scan finishes after the listing changed (a file's close)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not seen within {timeout} s")
        await asyncio.sleep(0.05)


def served_of(body: dict[str, Any]) -> list[str]:
    """The served handles of a GET /v1/companions body ({"mode", "companions": [{"handle", "served", "reason"}]})."""
    assert body["mode"] == "many", body
    return sorted(entry["handle"] for entry in body["companions"] if entry["served"])


def faulted_of(body: dict[str, Any]) -> dict[str, str]:
    """handle -> reason for the companions a GET /v1/companions body lists as not served."""
    return {entry["handle"]: entry["reason"] for entry in body["companions"] if not entry["served"]}


def turn_body(handle: str, number: int) -> dict[str, Any]:
    """A turn for one companion; its marker word (one keyword token) is unique to that turn and companion."""
    marker = marker_of(handle, number)
    ts = datetime.now(CST).isoformat(timespec="seconds")
    return {"turn_id": f"{handle}-t{number:03d}", "user": f"我们第{number}次聊到{marker}这个暗号，记住哦",
            "companion": f"好的，{marker}我记住了", "ts": ts}


def marker_of(handle: str, number: int) -> str:
    return f"mk{handle}x{number}q"


def stored_turns(db: Path) -> set[str]:
    """Every turn id in a companion file (read-only: the daemon's lock and the file are left alone)."""
    conn = connect(db, readonly=True)
    try:
        return {row[0] for row in conn.execute("SELECT DISTINCT turn_id FROM chat_message")}
    finally:
        conn.close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
