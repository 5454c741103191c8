"""WAL checkpoints off the request path: a connection of their own, on a thread of their own, each heartbeat.

SQLite checkpoints the WAL inside whichever COMMIT takes it past 1,000 pages. In the daemon that is
the one DB thread that also answers /v1/context, so under chat load a reply now and then waited
for a checkpoint (copying pages into the database file and an fsync; 40 ms for a small one here).
The daemon's connection therefore never checkpoints (`wal_autocheckpoint = 0`). After each
heartbeat this checkpointer runs a PASSIVE checkpoint, which waits for no reader and no writer,
and the daemon connection's `journal_size_limit` shrinks the WAL file when its next write starts
the log over (set on the checkpointer's connection it does nothing: tried). A stop closes the
daemon's connection last, which checkpoints what is left.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from engine.store import connect

WAL_LIMIT_BYTES = 64 * 1024 * 1024


def hand_over_checkpoints(conn: Any) -> None:
    """For the daemon's own connection (on its DB thread): never checkpoint inside a request's COMMIT."""
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")


class WalCheckpointer:
    def __init__(self, path: Path):
        self.path = path
        self._conn: Any = None
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="wal-checkpoint")

    def _checkpoint(self) -> tuple[int, int, int]:
        if self._conn is None:  # journal_size_limit is the writer's to apply: see hand_over_checkpoints
            self._conn = connect(self.path)
        busy, wal_frames, copied = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(busy), int(wal_frames), int(copied)

    async def run(self) -> tuple[int, int, int]:
        """(busy, frames in the WAL, frames copied into the database) of one PASSIVE checkpoint."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._checkpoint)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)
