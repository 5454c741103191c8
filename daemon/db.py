"""The daemon's async handle on its database: engine functions run on aiosqlite's one worker thread.

Engine store functions are plain synchronous `fn(conn, ...)`; the daemon must not block its event
loop on SQLite, and one connection must be used from one thread. aiosqlite already owns exactly
that thread, so `call()` queues the function onto it (through aiosqlite's `_execute`, the one
private entry point we use; the version range in pyproject.toml pins it).

A many-companion host also runs her heartbeats on ONE shared thread (daemon/beat_lane.py), a
second's group back to back while the CPU is warm: `run_if_free` uses her connection from that
thread when hers is idle. A lock held around every use keeps the connection to one thread at a
time; when hers is busy, the beat goes to her own queue (`enqueue`) and waits its turn there.

It is also where a storage fault becomes a state: every call's SQLITE_FULL / ENOSPC is raised as
StorageFullError (engine.store.connect.store_fault, the one mapping), `fault` then says why writes
fail (GET /v1/health reports it as db_ok: false), and the first write that succeeds again clears it.
A failed write leaves the WAL as long as it got; a TRUNCATE checkpoint when the disk fills and
again on recovery gives that space back instead of letting the log refill the freed disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from engine.errors import StorageFullError
from engine.store import connect
from engine.store.connect import store_fault

T = TypeVar("T")
CLOSE_TIMEOUT_S = 5.0


class AsyncStore:
    def __init__(self, path: Path, cache_kib: int | None = None, lookaside: bool = True):
        self.path = path
        self.cache_kib = cache_kib  # the connection's page cache (engine.store.connect); None = SQLite's default
        self.lookaside = lookaside  # False: SQLite's per-connection allocation pool off (engine/store/lookaside.py)
        self._aconn: aiosqlite.Connection | None = None
        self.fault: str | None = None  # why writes fail right now (disk full), None when they work
        self._lock = threading.Lock()  # held by whichever thread uses the connection: hers, or the beat lane

    async def open(self) -> AsyncStore:
        self._aconn = aiosqlite.Connection(
            lambda: connect(self.path, check_same_thread=False, cache_kib=self.cache_kib, lookaside=self.lookaside),
            iter_chunk_size=64,
        )
        await self._aconn
        return self

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on the database thread and return its result."""
        assert self._aconn is not None, "AsyncStore.open() first"
        return await self._aconn._execute(self._wrap(self._aconn, fn, args, kwargs))

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue `fn(conn, *args)` on the database thread; its future (no task, no coroutine).

        For the many-companion host's heartbeats: a thousand companions beating every 15 s pay for
        each Task and coroutine step on the one event loop (~0.3 ms a beat), a future costs a tenth.
        Same queue and thread as `call`, so it keeps the order of everything else on her connection.
        """
        aconn = self._aconn
        if aconn is None or not aconn._running or aconn._connection is None:
            raise ValueError("Connection closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        aconn._tx.put_nowait((future, self._wrap(aconn, fn, args, {})))
        return future

    def enqueue(self, future: asyncio.Future[Any], fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(conn, *args)` on her thread to resolve `future` (which the caller made): safe from any thread."""
        aconn = self._aconn
        if aconn is None or not aconn._running or aconn._connection is None:
            future.get_loop().call_soon_threadsafe(aiosqlite.core.set_exception, future, ValueError("Connection closed"))
            return
        aconn._tx.put_nowait((future, self._wrap(aconn, fn, args, {})))

    def run_if_free(self, fn: Callable[..., T], *args: Any) -> tuple[bool, T | None]:
        """From another thread: (True, fn(conn, *args)) when her connection is idle; (False, None) when in use.

        Never waits: the beat lane must not stall a second's group behind one companion's long call
        (a consolidation, a forget); that one's beat then runs on her own thread (`enqueue`). Raises
        what `fn` raises, with the same storage-fault mapping as `call`.
        """
        aconn = self._aconn
        if aconn is None or not self._lock.acquire(blocking=False):
            return False, None
        try:
            if not aconn._running or aconn._connection is None:
                return False, None
            return True, self._run(aconn._connection, fn, args, {})
        finally:
            self._lock.release()

    def _wrap(self, aconn: aiosqlite.Connection, fn: Callable[..., T], args: Any, kwargs: Any) -> Callable[[], T]:
        def run() -> T:
            with self._lock:
                return self._run(aconn._conn, fn, args, kwargs)

        return run

    def _run(self, conn: Any, fn: Callable[..., T], args: Any, kwargs: Any) -> T:
        changes = conn.total_changes
        try:
            result = fn(conn, *args, **kwargs)
        except Exception as exc:
            fault = store_fault(exc, self.path)
            if isinstance(fault, StorageFullError):
                if self.fault is None:
                    _truncate_wal(conn)
                self.fault = str(fault)
                raise fault from exc
            raise
        if self.fault is not None and conn.total_changes != changes:
            self.fault = None  # a write landed: space is back; give the WAL's growth back too
            _truncate_wal(conn)
        return result

    async def close(self) -> None:
        """Close the connection (its last checkpoint included), bounded: a stop must always complete."""
        if self._aconn is not None:
            aconn, self._aconn = self._aconn, None
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    # Her thread takes the lock for good: the beat lane (run_if_free) uses this connection no more.
                    await aconn._execute(self._lock.acquire)
                    await aconn.close()
            except Exception:  # a stuck statement: interrupt it; the WAL stays and SQLite replays it on open
                with contextlib.suppress(Exception):
                    aconn._conn.interrupt()
                with contextlib.suppress(Exception):
                    aconn.stop()  # aiosqlite's thread is not a daemon thread: it must leave, or the process cannot


def _truncate_wal(conn: Any) -> None:
    """Best effort: copy what the WAL holds into the database and cut the WAL file to zero bytes."""
    with contextlib.suppress(Exception):
        if not conn.in_transaction:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
