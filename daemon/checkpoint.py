"""WAL checkpoints off the request path: a connection of their own, on a thread of their own, each heartbeat.

SQLite checkpoints the WAL inside whichever COMMIT takes it past 1,000 pages. In the daemon that is
the one DB thread that also answers /v1/context, so under chat load a reply now and then waited
for a checkpoint (copying pages into the database file and an fsync; 40 ms for a small one here).
The daemon's connection therefore never checkpoints (`wal_autocheckpoint = 0`). After each
heartbeat this checkpointer runs a PASSIVE checkpoint, which waits for no reader and no writer,
and the daemon connection's `journal_size_limit` shrinks the WAL file when its next write starts
the log over (set on the checkpointer's connection it does nothing: tried). A stop closes the
daemon's connection last, which checkpoints what is left.

A PASSIVE checkpoint never finishes under a flat-out write stream (new frames arrive while it
copies), and a WAL that is never fully copied is never started over: it grew to fill an 8 MB disk
in seconds (bench/chaos_storage.py). So the WAL is also bounded by size: a watcher looks at the
file every second and, past WAL_SOFT_LIMIT_BYTES, runs a TRUNCATE checkpoint (it briefly holds new
writers back, which is the price of a bounded log; it happens only under sustained writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from engine.store import connect
from engine.store.connect import BUSY_TIMEOUT_MS
from engine.store.types import Conn

WAL_SOFT_LIMIT_BYTES = 4 * 1024 * 1024
WAL_LIMIT_BYTES = WAL_SOFT_LIMIT_BYTES  # the size the writer cuts the file back to when the log starts over
WATCH_EVERY_S = 1.0
# A TRUNCATE holds the write lock while it waits for readers; Litestream (daemon/replication.py) keeps a
# read transaction open on the WAL at all times, so with the 5 s busy_timeout every TRUNCATE froze her
# writes for 5 s and then failed anyway (measured: bench/replication.py). Under Litestream its own
# checkpoints bound the WAL; without it a reader of ours is gone within this wait.
TRUNCATE_WAIT_MS = 200


def hand_over_checkpoints(conn: Conn) -> None:
    """For the daemon's own connection (on its DB thread): never checkpoint inside a request's COMMIT."""
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")


class WalCheckpointer:
    def __init__(self, path: Path):
        self.path = path
        self._conn: Any = None
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="wal-checkpoint")
        self._mode = "PASSIVE"
        self._watcher: asyncio.Future[None] | None = None

    def _checkpoint(self) -> tuple[int, int, int]:
        if self._conn is None:  # journal_size_limit is the writer's to apply: see hand_over_checkpoints
            self._conn = connect(self.path)
        wait_ms = TRUNCATE_WAIT_MS if self._mode == "TRUNCATE" else BUSY_TIMEOUT_MS
        self._conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        busy, wal_frames, copied = self._conn.execute(f"PRAGMA wal_checkpoint({self._mode})").fetchone()
        return int(busy), int(wal_frames), int(copied)

    async def run(self, mode: str = "PASSIVE") -> tuple[int, int, int]:
        """(busy, frames in the WAL, frames copied into the database) of one checkpoint (PASSIVE or TRUNCATE)."""
        assert mode in ("PASSIVE", "TRUNCATE")

        def step() -> tuple[int, int, int]:
            self._mode = mode
            return self._checkpoint()

        return await asyncio.get_running_loop().run_in_executor(self._executor, step)

    def wal_bytes(self) -> int:
        try:
            return os.stat(f"{self.path}-wal").st_size
        except FileNotFoundError:
            return 0

    def start(self, log: Any = None) -> None:
        """Watch the WAL's size (see the module doc) until close()."""
        self._watcher = asyncio.ensure_future(self._watch(log))

    async def _watch(self, log: Any) -> None:
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            await self.enforce_limit(log)

    async def enforce_limit(self, log: Any = None) -> bool:
        """TRUNCATE-checkpoint a WAL past WAL_SOFT_LIMIT_BYTES; True when it did."""
        size = self.wal_bytes()
        if size <= WAL_SOFT_LIMIT_BYTES:
            return False
        try:
            busy, frames, copied = await self.run("TRUNCATE")
        except Exception as exc:  # a full disk: the database cannot grow to take the pages; try again later
            if log is not None:
                log.warning("db.checkpoint_failed", mode="truncate", wal_bytes=size, error=type(exc).__name__)
            return False
        if log is not None:
            log.info("db.wal_truncated", wal_bytes=size, frames=frames, copied=copied, busy=busy)
        return busy == 0

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(BaseException):
                await self._watcher
            self._watcher = None
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)
