"""A full disk is a state, not a crash: 503 storage_full, health db_ok false, a stop that completes, a
one-line refusal to start, recovery once space is freed with the WAL given back, and honest gaps.

The database lives on a small tmpfs mounted for the test (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from engine.store import connect
from tests.api_support import SocketClient
from tests.conftest import SMALL_DISK_BYTES, fill_disk, run_anima, write_config

pytestmark = pytest.mark.e2e


def turn(n: int) -> dict[str, object]:
    return {"turn_id": f"t{n}", "user": f"message number {n} " + "x" * 400, "companion": "ok " + "y" * 400,
            "ts": "2026-05-28T20:00:00+08:00"}


async def _until_full(sock: str) -> tuple[int, list[int], dict, dict]:
    """Send turns until one is refused; returns (accepted, statuses seen, the refusal, health then)."""
    statuses: list[int] = []
    async with SocketClient(sock) as her:
        for n in range(3000):
            status, body = await her.call("POST", "/v1/turns", turn(n))
            statuses.append(status)
            if status != 200:
                _, health = await her.call("GET", "/v1/health")
                return n, statuses, body, health
    raise AssertionError("the disk never filled")


async def _call(sock: str, method: str, path: str, body: object = None) -> tuple[int, dict]:
    async with SocketClient(sock) as her:
        return await her.call(method, path, body)


def _stopped_at(db: Path) -> float | None:
    conn = connect(db, readonly=True)
    try:
        return conn.execute("SELECT stopped_at FROM daemon_state WHERE id = 1").fetchone()[0]
    finally:
        conn.close()


def _daemon_on_full_disk(tmp_path: Path, disk: Path, start_daemon) -> tuple[Path, str, Path, object, int]:
    db = disk / "her.db"
    sock = str(tmp_path / "a.sock")
    config = write_config(tmp_path / "config.toml", extra=f"[api]\nsocket_path = \"{sock}\"\n")
    daemon = start_daemon(db, config=config)
    fill_disk(disk)
    accepted, statuses, refusal, health = asyncio.run(_until_full(sock))
    assert statuses[-1] == 503 and 500 not in statuses
    assert refusal["error"]["code"] == "storage_full" and "full" in refusal["error"]["message"]
    assert health["db_ok"] is False and health["alive"] is False and "full" in health["db_error"]
    return db, sock, config, daemon, accepted


def test_a_full_disk_refuses_writes_with_503_and_a_stop_still_completes(tmp_path: Path, small_disk: Path,
                                                                       start_daemon) -> None:
    db, sock, config, daemon, _ = _daemon_on_full_disk(tmp_path, small_disk, start_daemon)
    refused = [asyncio.run(_call(sock, "POST", "/v1/turns", turn(5000 + n)))[0] for n in range(20)]
    assert refused == [503] * 20
    daemon.notify.sock.setblocking(False)  # drop what was sent before the disk filled
    with contextlib.suppress(BlockingIOError):
        while True:
            daemon.notify.sock.recv(4096)
    daemon.notify.wait_for("WATCHDOG=1", 5)  # her heart and the watchdog go on while writes are refused
    daemon.notify.wait_for("WATCHDOG=1", 5)

    started = time.monotonic()
    assert daemon.stop(timeout=20) == 0
    assert time.monotonic() - started < 12  # a stop always completes (systemd would kill at 25 s)
    log = daemon.log_text()
    assert "Traceback" not in log
    # Each refusal is a state, not an error line: one rate-limited warning for the lot.
    assert "event=api.failed" not in log and 1 <= log.count("event=api.storage_full") <= 2
    # Honest gaps: the next start reads clean_stop from stopped_at; it is set only if the stop got on file.
    assert (_stopped_at(db) is None) is ("event=daemon.stop_unrecorded" in log)

    fill_disk(small_disk, "filler2")  # whatever the stop freed is taken again
    before = _stopped_at(db)
    again = run_anima("--config", str(config), "--db", str(db), "run", timeout=60)
    assert again.code == 1 and again.err.startswith("anima: ") and again.err.count("\n") == 1, again.err
    assert "full" in again.err
    assert _stopped_at(db) == before  # the refused start recorded nothing (no gap, no start)


def test_freed_space_is_taken_up_again_without_a_restart(tmp_path: Path, small_disk: Path, start_daemon) -> None:
    db, sock, _, daemon, accepted = _daemon_on_full_disk(tmp_path, small_disk, start_daemon)
    (small_disk / "filler").unlink()
    status, body = asyncio.run(_call(sock, "POST", "/v1/turns", turn(10_000)))
    assert status == 200, body
    _, health = asyncio.run(_call(sock, "GET", "/v1/health"))
    assert health["db_ok"] is True and "db_error" not in health
    wal = Path(f"{db}-wal")
    assert wal.stat().st_size < SMALL_DISK_BYTES // 4  # the WAL's growth was given back, not left to refill the disk
    assert daemon.stop(timeout=30) == 0  # its indexer may be embedding the backlog: drain is bounded at 8 s
    conn = connect(db, readonly=True)
    try:
        turns = conn.execute("SELECT count(DISTINCT turn_id) FROM chat_message").fetchone()[0]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert turns == accepted + 1  # every acknowledged turn is there, no refused one is
