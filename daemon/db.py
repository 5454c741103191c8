"""The daemon's async handle on its database: engine functions run on a DB pool thread, in order.

Engine store functions are plain synchronous `fn(conn, ...)`; the daemon must not block its event
loop on SQLite, and one connection must be used from one thread at a time. `call()` queues the
function on her connection's lane (daemon/db_pool.py): the pool runs a lane's calls in order on
whichever of its threads is free, so a thousand companions share a few threads instead of holding one
each (aiosqlite's design, 45 KiB of RSS a thread), and a slow call still holds only its own thread.

A many-companion host also runs her heartbeats on ONE shared thread (daemon/beat_lane.py), a
second's group back to back while the CPU is warm: `run_if_free` uses her connection from that
thread when it is idle. A lock held around every use keeps the connection to one thread at a
time; when hers is busy, the beat goes to her lane (`enqueue`) and waits its turn there.

It is also where a storage fault becomes a state: every call's SQLITE_FULL / ENOSPC is raised as
StorageFullError (engine.store.connect.store_fault, the one mapping), `fault` then says why writes
fail (GET /v1/health reports it as db_ok: false), and the first write that succeeds again clears it.
A failed write leaves the WAL as long as it got; a TRUNCATE checkpoint when the disk fills and
again on recovery gives that space back instead of letting the log refill the freed disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from daemon.db_pool import DbPool, Lane, default_pool, set_exception
from engine.errors import StorageFullError
from engine.store import connect
from engine.store.connect import store_fault
from engine.store.types import Conn

T = TypeVar("T")
CLOSE_TIMEOUT_S = 5.0


class AsyncStore:
    def __init__(self, path: Path, cache_kib: int | None = None, lookaside: bool = True, pool: DbPool | None = None):
        self.path = path
        self.cache_kib = cache_kib  # the connection's page cache (engine.store.connect); None = SQLite's default
        self.lookaside = lookaside  # False: SQLite's per-connection allocation pool off (engine/store/lookaside.py)
        self.pool = pool or default_pool()
        self._lane: Lane | None = None
        self._conn: sqlite3.Connection | None = None
        self._open = False  # False before open() and from close() on: new calls are refused
        self._closed = False  # the connection is closed: a call that still reaches it fails (read under _lock)
        self.fault: str | None = None  # why writes fail right now (disk full), None when they work
        self._lock = threading.Lock()  # held by whichever thread uses the connection: a pool thread, or the beat lane

    async def open(self) -> AsyncStore:
        lane = Lane(self.pool)
        future: asyncio.Future[sqlite3.Connection] = asyncio.get_running_loop().create_future()
        lane.put(future, lambda: connect(self.path, check_same_thread=False, cache_kib=self.cache_kib,
                                         lookaside=self.lookaside))
        self._conn = await future
        self._lane, self._open = lane, True
        return self

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on a DB thread, after every call queued before it, and return its result."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._lane_or_closed().put(future, self._wrap(fn, args, kwargs))
        return await future

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue `fn(conn, *args)` on her lane; its future (no task, no coroutine).

        For the many-companion host's heartbeats: a thousand companions beating every 15 s pay for
        each Task and coroutine step on the one event loop (~0.3 ms a beat), a future costs a tenth.
        Same lane as `call`, so it keeps the order of everything else on her connection.
        """
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._lane_or_closed().put(future, self._wrap(fn, args, {}))
        return future

    def enqueue(self, future: asyncio.Future[Any], fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(conn, *args)` on her lane to resolve `future` (which the caller made): safe from any thread."""
        lane = self._lane
        if lane is None or not self._open:
            future.get_loop().call_soon_threadsafe(set_exception, future, ValueError("Connection closed"))
            return
        lane.put(future, self._wrap(fn, args, {}))

    def run_if_free(self, fn: Callable[..., T], *args: Any) -> tuple[bool, T | None]:
        """From another thread: (True, fn(conn, *args)) when her connection is idle; (False, None) when in use.

        Never waits: the beat lane must not stall a second's group behind one companion's long call
        (a consolidation, a forget); that one's beat then runs on her lane (`enqueue`). Raises
        what `fn` raises, with the same storage-fault mapping as `call`.
        """
        conn = self._conn
        if conn is None or not self._open or not self._lock.acquire(blocking=False):
            return False, None
        try:
            if not self._open:  # close() began meanwhile (it sets this before the connection closes)
                return False, None
            return True, self._run(conn, fn, args, {})
        finally:
            self._lock.release()

    def _lane_or_closed(self) -> Lane:
        if self._lane is None or not self._open:
            raise ValueError("Connection closed")
        return self._lane

    def _wrap(self, fn: Callable[..., T], args: Any, kwargs: Any) -> Callable[[], T]:
        conn = self._conn

        def run() -> T:
            with self._lock:
                if self._closed:  # put by a thread that checked just before close() (the beat lane's enqueue)
                    raise ValueError("Connection closed")
                return self._run(conn, fn, args, kwargs)

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
        """Close the connection (its last checkpoint included) after the calls queued before, bounded: a stop must complete."""
        lane, conn = self._lane, self._conn
        if lane is None or conn is None or not self._open:
            return
        self._open = False  # new calls are refused from now on; the queued ones still run, then the close

        def close_for_good() -> None:
            with self._lock:  # after the beat lane's use, if any; neither it nor a late call uses it again
                self._closed = True
                conn.close()

        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane.put(future, close_for_good)
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await future
        except Exception:  # a stuck statement: interrupt it; the close runs after it; SQLite replays the WAL on open
            with contextlib.suppress(Exception):
                conn.interrupt()


def _truncate_wal(conn: Conn) -> None:
    """Best effort: copy what the WAL holds into the database and cut the WAL file to zero bytes."""
    with contextlib.suppress(Exception):
        if not conn.in_transaction:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
