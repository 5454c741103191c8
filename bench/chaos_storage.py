"""Storage chaos, JSON out: the kill -9 loop under a flat-out turn stream, and a full disk.

kill loop (`run_kill_loop`): a real daemon (`python -m daemon run`) on one database file, C clients
posting `POST /v1/turns` back to back over its Unix socket; at a random moment (uniform in
[0.05, --max-alive-s] after READY, or, one cycle in ten, during start-up) the daemon gets SIGKILL,
and is started again. Every 200 answer is an acknowledged turn. At the end the file must hold
every acknowledged turn (0 missing), each turn's two messages exactly once (0 duplicated, 0 half
written) and pass `PRAGMA integrity_check`.

disk full (`run_disk_full`): the database on a small filesystem: a tmpfs if `mount -t tmpfs` works
(root), else a loop-mounted ext4 image, else RLIMIT_FSIZE on the daemon (said in `filesystem`). The
stream runs while the disk is filled to the last block; it reports the statuses seen (503
storage_full expected, no 500), what /v1/health said, how long SIGTERM took, what a start on the full
disk printed, and after freeing the space: a turn accepted again, health, WAL size, 0 acknowledged
turns missing, integrity.

Only the daemon this script starts is targeted, on a Unix socket in a temporary directory; counts
and times are bounded by the arguments.

Usage: python bench/chaos_storage.py [--cycles 200] [--clients 4] [--max-alive-s 1.0] [--skip-disk-full]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from engine.store import connect  # noqa: E402

TS = "2026-05-28T20:00:00+08:00"


# ---------------------------------------------------------------- a daemon of our own


class Daemon:
    """One `anima run` child with its own notify socket (READY=1 tells us it serves)."""

    def __init__(self, root: Path, db: Path, config: Path, n: int, preexec: Any = None):
        self.notify_path = root / f"notify-{n}.sock"
        self.notify_path.unlink(missing_ok=True)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(self.notify_path))
        self.log_path = root / "daemon.log"
        env = {**os.environ, "NOTIFY_SOCKET": str(self.notify_path), "PYTHONPATH": str(REPO)}
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db),
                                          "run"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                         preexec_fn=preexec)

    def wait_ready(self, timeout: float = 60.0) -> float:
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode} before READY; see {self.log_path}")
            self.notify.settimeout(0.2)
            with contextlib.suppress(TimeoutError):
                if "READY=1" in self.notify.recv(4096).decode().split("\n"):
                    return time.monotonic() - started
        raise RuntimeError(f"daemon not READY within {timeout} s; see {self.log_path}")

    def kill9(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.notify.close()

    def term(self, timeout: float = 30.0) -> tuple[int | None, float]:
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        return code, time.monotonic() - started


def _config(root: Path, sock: Path) -> Path:
    path = root / "config.toml"
    path.write_text(f'[heartbeat]\ninterval_s = 1.0\n[api]\nsocket_path = "{sock}"\n[log]\nlevel = "info"\n',
                    encoding="utf-8")
    return path


def _turn(turn_id: str) -> dict[str, Any]:
    return {"turn_id": turn_id, "user": f"今天的第{turn_id}条消息，天气不错", "companion": "嗯嗯，我也觉得", "ts": TS}


async def _stream(sock: Path, prefix: str, clients: int, stop: asyncio.Event, acked: list[str],
                  statuses: dict[int, int]) -> None:
    """C clients posting turns back to back until `stop` or the daemon vanishes."""
    counter = [0]

    async def client(session: aiohttp.ClientSession) -> None:
        while not stop.is_set():
            counter[0] += 1
            turn_id = f"{prefix}-{counter[0]}"
            try:
                async with session.post("http://anima/v1/turns", json=_turn(turn_id),
                                        timeout=aiohttp.ClientTimeout(total=10)) as resp:
                    await resp.read()
                    statuses[resp.status] = statuses.get(resp.status, 0) + 1
                    if resp.status == 200:
                        acked.append(turn_id)
            except (TimeoutError, aiohttp.ClientError, OSError):
                return  # the daemon is gone (killed); an unanswered turn is not acknowledged

    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session:
        await asyncio.gather(*(client(session) for _ in range(clients)))


def _check_file(db: Path, acked: list[str]) -> dict[str, Any]:
    conn = connect(db, readonly=True)
    try:
        rows = conn.execute("SELECT turn_id, role, count(*) FROM chat_message GROUP BY turn_id, role").fetchall()
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    per_turn: dict[str, dict[str, int]] = {}
    for turn_id, role, count in rows:
        per_turn.setdefault(turn_id, {})[role] = count
    missing = [t for t in acked if t not in per_turn]
    duplicated = [t for t, roles in per_turn.items() if any(c > 1 for c in roles.values())]
    half = [t for t, roles in per_turn.items() if len(roles) != 2]
    return {"turns_on_file": len(per_turn), "missing": len(missing), "duplicated": len(duplicated),
            "half_written": len(half), "integrity": integrity, "missing_examples": missing[:5]}


# ---------------------------------------------------------------- the kill -9 loop


def run_kill_loop(cycles: int = 200, *, clients: int = 4, max_alive_s: float = 1.0, seed: int = 11,
                  root: Path | None = None) -> dict[str, Any]:
    """Kill -9 a daemon under a turn stream `cycles` times; prove no acknowledged turn is lost or doubled."""
    rng = random.Random(seed)
    own_root = root is None
    root = Path(tempfile.mkdtemp(prefix="anima-chaos-")) if root is None else root
    db, sock = root / "her.db", root / "a.sock"
    config = _config(root, sock)
    acked: list[str] = []
    statuses: dict[int, int] = {}
    kills_in_startup = 0
    ready_s: list[float] = []
    started = time.monotonic()
    try:
        for cycle in range(cycles):
            daemon = Daemon(root, db, config, cycle)
            if cycle % 10 == 9:  # during start-up: lock, quick_check, migrate, gap, parts starting
                time.sleep(rng.uniform(0.0, 0.8))
                daemon.kill9()
                kills_in_startup += 1
                continue
            ready_s.append(daemon.wait_ready())
            alive_s = rng.uniform(0.05, max_alive_s)

            async def one_cycle(daemon: Daemon = daemon, alive_s: float = alive_s, cycle: int = cycle) -> None:
                stop = asyncio.Event()
                task = asyncio.create_task(_stream(sock, f"c{cycle}", clients, stop, acked, statuses))
                await asyncio.sleep(alive_s)
                daemon.kill9()
                stop.set()
                await task

            asyncio.run(one_cycle())
        final = Daemon(root, db, config, cycles)  # one clean start: recovery of the last kill
        final.wait_ready()
        code, _ = final.term()
        check = _check_file(db, acked)
    finally:
        if own_root:
            shutil.rmtree(root, ignore_errors=True)
    ready_sorted = sorted(ready_s) or [0.0]
    return {
        "scenario": "kill9_loop", "cycles": cycles, "kills_during_startup": kills_in_startup,
        "clients": clients, "acknowledged_turns": len(acked), "statuses": {str(k): v for k, v in sorted(statuses.items())},
        **check, "final_stop_exit": code, "ready_s_p50": round(ready_sorted[len(ready_sorted) // 2], 3),
        "seconds": round(time.monotonic() - started, 1),
    }


# ---------------------------------------------------------------- disk full


def _small_filesystem(root: Path, size_bytes: int) -> tuple[str, Path, Any]:
    """(kind, mount point, cleanup): tmpfs, else a loop-mounted ext4 image, else RLIMIT_FSIZE."""
    mount = root / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode == 0:
        return "tmpfs", mount, lambda: subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    image = root / "disk.img"
    with open(image, "wb") as handle:
        handle.truncate(size_bytes)
    if (subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True).returncode == 0
            and subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True).returncode == 0):
        return "ext4_loop", mount, lambda: subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    return "rlimit_fsize", mount, lambda: None


def _fill(folder: Path, name: str) -> int:
    written = 0
    with open(folder / name, "ab", buffering=0) as handle:
        for block in (1 << 16, 1 << 12):
            with contextlib.suppress(OSError):
                while True:
                    written += handle.write(b"\0" * block)
    return written


async def _get(sock: Path, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session, \
            session.get("http://anima" + path) as resp:
        return resp.status, await resp.json(content_type=None)


async def _post(sock: Path, body: dict[str, Any]) -> tuple[int, Any]:
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as session, \
            session.post("http://anima/v1/turns", json=body) as resp:
        return resp.status, await resp.json(content_type=None)


def run_disk_full(*, size_bytes: int = 8 * 1024 * 1024, clients: int = 4, stream_s: float = 4.0,
                  root: Path | None = None) -> dict[str, Any]:
    """Fill the disk under a turn stream; report how the daemon behaves, stops, restarts and recovers."""
    own_root = root is None
    root = Path(tempfile.mkdtemp(prefix="anima-diskfull-")) if root is None else root
    kind, mount, cleanup = _small_filesystem(root, size_bytes)
    db, sock = mount / "her.db", root / "a.sock"
    config = _config(root, sock)
    preexec = None
    if kind == "rlimit_fsize":
        def preexec() -> None:  # the daemon's files may not grow past this (SIGXFSZ ignored: EFBIG instead)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (size_bytes, size_bytes))
    out: dict[str, Any] = {"scenario": "disk_full", "filesystem": kind, "size_bytes": size_bytes}
    acked: list[str] = []
    statuses: dict[int, int] = {}
    try:
        daemon = Daemon(root, db, config, 0, preexec)
        daemon.wait_ready()

        async def stream_while_filling() -> dict[str, Any]:
            stop = asyncio.Event()
            task = asyncio.create_task(_stream(sock, "full", clients, stop, acked, statuses))
            await asyncio.sleep(0.5)
            if kind != "rlimit_fsize":
                await asyncio.to_thread(_fill, mount, "filler")
            await asyncio.sleep(stream_s)
            _, health = await _get(sock, "/v1/health")
            refusal = await _post(sock, _turn("probe-full"))
            stop.set()
            await task
            return {"health_while_full": {k: health.get(k) for k in ("alive", "db_ok", "db_error")},
                    "refusal": refusal[1].get("error") if refusal[0] != 200 else None}

        out.update(asyncio.run(stream_while_filling()))
        out["statuses_while_full"] = {str(k): v for k, v in sorted(statuses.items())}
        code, took = daemon.term()
        out["sigterm_exit"], out["sigterm_s"] = code, round(took, 2)
        if kind != "rlimit_fsize":
            _fill(mount, "filler2")
        again = subprocess.run([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                               capture_output=True, text=True, cwd=REPO, timeout=60,
                               env={**os.environ, "PYTHONPATH": str(REPO)}, preexec_fn=preexec)
        out["start_on_full_disk"] = {"exit": again.returncode, "stderr_lines": again.stderr.count("\n"),
                                     "traceback": "Traceback" in again.stderr, "stderr": again.stderr.strip()[:300]}
        for filler in mount.glob("filler*"):
            filler.unlink()
        wal = Path(f"{db}-wal")
        out["wal_bytes_after_free"] = wal.stat().st_size if wal.exists() else 0
        recovered = Daemon(root, db, config, 1)
        recovered.wait_ready()
        status, _ = asyncio.run(_post(sock, _turn("after-free")))
        if status == 200:
            acked.append("after-free")
        _, health = asyncio.run(_get(sock, "/v1/health"))
        out["after_free"] = {"turn_status": status, "db_ok": health.get("db_ok")}
        code, took = recovered.term()
        out["wal_bytes_after_stop"] = wal.stat().st_size if wal.exists() else 0
        out["acknowledged_turns"] = len(acked)
        out.update(_check_file(db, acked))
        out["traceback_in_log"] = "Traceback" in daemon.log_path.read_text(errors="replace")
    finally:
        cleanup()
        if own_root:
            shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--max-alive-s", type=float, default=1.0)
    parser.add_argument("--skip-disk-full", action="store_true")
    parser.add_argument("--skip-kill-loop", action="store_true")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    if not args.skip_disk_full:
        report["disk_full"] = run_disk_full(clients=args.clients)
    if not args.skip_kill_loop:
        report["kill_loop"] = run_kill_loop(args.cycles, clients=args.clients, max_alive_s=args.max_alive_s)
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
