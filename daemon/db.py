"""The daemon's async handle on a companion's database: her calls in order on her aiosqlite connection's thread.

Engine store functions are plain synchronous `fn(conn, ...)`; the daemon must not block its event
loop on SQLite, and one connection must be used from one thread at a time. `call()` runs the function
on her `aiosqlite.Connection`, the async connection to her file: its one thread runs her calls in
the order they came, so a slow call (a long recall, a forget, a file another process holds locked)
holds only her own thread, never another companion's.

That thread runs only while she has work. Her sqlite3 connection is opened once and stays open (her
schema read once, her page cache kept); aiosqlite's thread over it starts with her first call and
stops after IDLE_S without one, so a thousand companions at rest hold no thread at all (an idle
thread that once ran SQLite keeps 45 KiB of RSS: 1,000 of them were 57.7 MB against 13.6 MB for one).
What keeps a companion at rest is that her idle work does not come here: a many-companion host runs
her heartbeats, and the checkpoints they leave due, on ONE shared thread (daemon/beat_lane.py), which
uses her connection through `run_if_free` when no call is on it. A lock held around every use keeps
the connection to one thread at a time; when hers is busy (she has work, so her thread runs anyway),
the beat goes to her thread (`enqueue`) and waits its turn there. Counted for issue 26 (bench/many.py,
50 companions, a 60 s idle window, on the DB pool this replaced): all 50 beats ran on the beat lane,
and the only calls that went to a companion's own lane were the 6 checkpoints those beats left due
(every 8th beat), which now run on the beat lane too; an idle host starts no thread for a companion.

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
from typing import Any, TypeVar, cast

import aiosqlite

from engine.errors import StorageFullError
from engine.store import connect
from engine.store.connect import store_fault
from engine.store.types import Conn

T = TypeVar("T")
CLOSE_TIMEOUT_S = 5.0
# Her thread stops after this long without a call. A chat's exchanges come seconds apart and keep it;
# starting one again costs ~0.1 ms. A host opening a thousand files at start holds about (files
# opened a second) x IDLE_S threads at once while it does.
IDLE_S = 5.0
ITER_CHUNK_SIZE = 64  # aiosqlite's cursor iteration; her calls return what they fetched, so unused


class Threads:
    """How many of the process's aiosqlite threads run now (GET /v1/health's db_threads), and the most at once."""

    def __init__(self) -> None:
        self.alive = 0
        self.peak = 0
        self.started = 0

    def start(self) -> None:
        self.alive += 1
        self.started += 1
        self.peak = max(self.peak, self.alive)

    def stop(self) -> None:
        self.alive -= 1


THREADS = Threads()  # counted on the event loop, where threads are started and stopped


class _Worker(aiosqlite.Connection):
    """aiosqlite's connection thread over her sqlite3 connection, which the store owns and which outlives it.

    aiosqlite runs its own statement methods; an engine function of the connection goes on the same
    queue (`put`), as aiosqlite's `_execute` puts them. Its internals used here (`_tx`, `_thread`,
    `_connection`, `_running`, the stop sentinel: aiosqlite 0.22.1; 0.20-0.21 were a Thread subclass) are pinned
    by tests/test_db.py.
    """

    def __init__(self, connector: Callable[[], sqlite3.Connection]):
        super().__init__(connector, ITER_CHUNK_SIZE)
        # A daemon thread: a call stuck past every stop bound, or a thread whose loop is gone, must not keep
        # the process alive (SQLite's WAL makes a process that ends mid-transaction the same as one killed).
        self._thread.daemon = True

    @classmethod
    def over(cls, conn: sqlite3.Connection) -> _Worker:
        """A thread for her connection, started now (no await: aiosqlite's connector would only hand it back)."""
        worker = cls(lambda: conn)
        worker._thread.start()
        worker._connection = conn
        return worker

    def put(self, future: asyncio.Future[Any], fn: Callable[[], Any]) -> None:
        """Queue `fn()` after her calls queued before; its result or exception resolves `future` on its loop."""
        self._tx.put_nowait((future, fn))

    def release(self) -> None:
        """End the thread after what is queued, leaving her connection open.

        Not aiosqlite's stop(): it closes the connection it holds, and answers a future on the loop
        when the thread ends, a wake-up of the loop for nothing (and an error once the loop is closed).
        """
        self._running = False
        self._connection = None
        self._tx.put_nowait((None, _stop_running))


def _stop_running() -> object:
    return aiosqlite.core._STOP_RUNNING_SENTINEL  # the worker thread's loop ends on it


class AsyncStore:
    def __init__(self, path: Path, cache_kib: int | None = None, lookaside: bool = True):
        self.path = path
        self.cache_kib = cache_kib  # the connection's page cache (engine.store.connect); None = SQLite's default
        self.lookaside = lookaside  # False: SQLite's per-connection allocation pool off (engine/store/lookaside.py)
        self._conn: sqlite3.Connection | None = None
        self._worker: _Worker | None = None  # her aiosqlite thread while she has work
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._put = 0  # calls queued on her thread (counted on the loop)
        self._done = 0  # calls her thread finished (counted on it): equal, her thread has nothing to do
        self._used = 0.0  # loop time of her last call
        self._timer: asyncio.TimerHandle | None = None
        self._open = False  # False before open() and from close() on: new calls are refused
        self._closed = False  # the connection is closed: a call that still reaches it fails (read under _lock)
        self.fault: str | None = None  # why writes fail right now (disk full), None when they work
        self._lock = threading.Lock()  # held by whichever thread uses the connection: hers, or the beat lane

    async def open(self) -> AsyncStore:
        """Open her connection on a thread of its own (aiosqlite's connector), which stays for her first calls."""
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()

        def connector() -> sqlite3.Connection:
            conn = connect(self.path, check_same_thread=False, cache_kib=self.cache_kib, lookaside=self.lookaside)
            return cast(sqlite3.Connection, conn)

        worker = _Worker(connector)
        THREADS.start()
        try:
            await worker
        except BaseException:
            THREADS.stop()
            raise
        self._conn = cast(sqlite3.Connection, worker._connection)
        self._worker, self._open = worker, True
        self._used_now()
        return self

    @property
    def working(self) -> bool:
        """Her thread runs now (it has calls, or waits out IDLE_S after her last)."""
        return self._worker is not None

    @property
    def busy(self) -> bool:
        """Her thread has a call queued or running (read on the loop)."""
        return self._worker is not None and self._done != self._put

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on her thread, after every call queued before it, and return its result."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue(future, fn, args, kwargs)
        return await future

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue `fn(conn, *args)` on her thread; its future (no task, no coroutine). Same order as `call`."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue(future, fn, args, {})
        return future

    def enqueue(self, future: asyncio.Future[Any], fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn(conn, *args)` on her thread to resolve `future` (which the caller made): safe from any thread."""
        if threading.get_ident() == self._loop_thread:
            self._enqueue(future, fn, args)
        else:  # the beat lane handing a beat back: her thread is started (and counted) on the loop
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for this any more
                future.get_loop().call_soon_threadsafe(self._enqueue, future, fn, args)

    def _enqueue(self, future: asyncio.Future[Any], fn: Callable[..., Any], args: Any) -> None:
        try:
            self._queue(future, fn, args, {})
        except ValueError as exc:
            _set_exception(future, exc)

    def _queue(self, future: asyncio.Future[Any], fn: Callable[..., Any], args: Any, kwargs: Any) -> None:
        """On the loop: put the call on her thread, starting one when she has none."""
        if self._conn is None or not self._open:
            raise ValueError("Connection closed")
        worker = self._worker
        if worker is None:
            worker = self._worker = _Worker.over(self._conn)
            THREADS.start()
        self._put += 1
        self._used_now()
        worker.put(future, self._wrap(fn, args, kwargs))

    def _used_now(self) -> None:
        assert self._loop is not None
        self._used = self._loop.time()
        if self._timer is None:
            self._timer = self._loop.call_later(IDLE_S, self._rest)

    def _rest(self) -> None:
        """Her thread's idle check (a loop timer): stop it once nothing is queued and IDLE_S passed since her last call."""
        assert self._loop is not None
        self._timer = None
        worker = self._worker
        if worker is None:
            return
        wait = self._used + IDLE_S - self._loop.time()
        if self._done != self._put or wait > 0:
            self._timer = self._loop.call_later(max(wait, 0.5), self._rest)
            return
        self._worker = None
        worker.release()
        THREADS.stop()

    def run_if_free(self, fn: Callable[..., T], *args: Any) -> tuple[bool, T | None]:
        """From another thread: (True, fn(conn, *args)) when her connection is idle; (False, None) when in use.

        Never waits: the beat lane must not stall a second's group behind one companion's long call
        (a consolidation, a forget); that one's beat then runs on her thread (`enqueue`). Raises
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

    def _wrap(self, fn: Callable[..., T], args: Any, kwargs: Any) -> Callable[[], T]:
        conn = self._conn

        def run() -> T:
            try:
                with self._lock:
                    if self._closed:  # queued by a caller that checked just before close()
                        raise ValueError("Connection closed")
                    return self._run(conn, fn, args, kwargs)
            finally:
                self._done += 1  # only her thread counts this: one at a time

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
        conn = self._conn
        if conn is None or not self._open:
            return
        self._open = False  # new calls are refused from now on; the queued ones still run, then the close
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        worker, self._worker = self._worker, None
        if worker is None:
            worker = _Worker.over(conn)
            THREADS.start()

        def close_for_good() -> None:
            with self._lock:  # after the beat lane's use, if any; neither it nor a late call uses it again
                self._closed = True
                conn.close()

        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        worker.put(future, close_for_good)
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await future
        except Exception:  # a stuck statement: interrupt it; the close runs after it; SQLite replays the WAL on open
            with contextlib.suppress(Exception):
                conn.interrupt()
        finally:
            worker.release()
            THREADS.stop()


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():  # a caller that gave up (a timeout) cancelled it
        future.set_exception(exc)


def _truncate_wal(conn: Conn) -> None:
    """Best effort: copy what the WAL holds into the database and cut the WAL file to zero bytes."""
    with contextlib.suppress(Exception):
        if not conn.in_transaction:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
