"""Threads that run SQLite connections' calls: each connection's calls in order, on whichever thread is free.

A connection must be used from one thread at a time and the event loop must not block on it. aiosqlite
gives every connection a thread of its own, which a many-companion host paid for a thousand times over:
an idle thread that once ran SQLite keeps its touched stack and glibc's per-thread state, 45 KiB each
(measured: 1,000 such threads, 57.7 MB of RSS against 13.6 MB for one thread doing the same work),
while at any moment only a handful of companions have work.

Here a connection's calls go into its `Lane`, a FIFO. A lane with calls is put in the pool's ready
line, and a free thread takes it and runs its calls until it is empty; a lane is in the line or on a
thread at most once, so its calls keep their order and never run on two threads at once. When no
thread is free a new one starts, so a slow call (a long recall, a forget, a file another process holds
locked) holds only its own thread and never delays another connection's: there are never more threads
than lanes with work at the same moment, the bound the one-thread-per-connection design had. A thread
idle for `idle_exit_s` leaves (down to `min_threads`), so an idle host holds a few threads, not a
thousand; glibc gives an exiting thread's stack pages back (madvise), so the peak does not stay either.

aiosqlite was measured again for issue 26 with its thread started only while her connection had work
(her sqlite3 connection kept open, lent to aiosqlite; the thread stopped after N s without a call),
bench/many.py at 1,000 companions paired against this pool on the loaded 2-core dev machine: with
N = 5 s idle CPU 3.31 % of a core against 1.88 % (300 s idle window), with N = 60 s 4.79 % against
3.53 % (180 s window) and 126 threads alive, RSS +26 MB, 1,000 threads at start; heartbeat lag no
better (p99 394 against 243 ms at N = 5 s, 190 against 187 ms at 60 s). Chat latency differed with the
machine's load (load average 5.6 in the aiosqlite run, 9.8 in the pool's), not comparable there.
Starting and stopping a thread per burst costs more CPU than the pool's shared threads, so the pool stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

# A thread with no work for a minute leaves: an idle host's periodic calls (a checkpoint every few
# seconds across a thousand companions) keep one or two busy, and starting one again costs ~0.1 ms.
IDLE_EXIT_S = 60.0
MIN_THREADS = 1

Call = tuple["asyncio.Future[Any] | None", Callable[[], Any]]


class DbPool:
    """The threads; `Lane`s put themselves in its ready line when they get work."""

    def __init__(self, min_threads: int = MIN_THREADS, idle_exit_s: float = IDLE_EXIT_S, name: str = "anima-db"):
        self.min_threads = min_threads
        self.idle_exit_s = idle_exit_s
        self.name = name
        self._ready: deque[Lane] = deque()
        self._mutex = threading.Lock()
        # The sleeping threads' wake locks, the most recently idle last. A lane wakes the LAST one: a
        # few calls a second then keep one warm thread busy and let the others time out and leave.
        # (threading.Condition wakes the longest waiter first: every thread got a call every few
        # seconds, none stayed idle for a minute, and a burst's threads never left.)
        self._sleepers: list[threading.Lock] = []
        self.threads = 0  # alive now
        self.idle = 0  # alive and not running a lane (asleep, or on the way back to sleep)
        self.peak_threads = 0
        self.started = 0  # threads ever started (tests and benches read these counters)

    def schedule(self, lane: Lane) -> None:
        """A lane has calls: an idle thread takes it, or a new thread starts for it."""
        with self._mutex:
            self._ready.append(lane)
            if len(self._ready) <= self.idle:
                # Idle threads not asleep (on their way back, or woken) each take a lane before sleeping:
                # wake a sleeper only for lanes beyond those, so the thread that just answered takes the next call.
                if len(self._ready) > self.idle - len(self._sleepers):
                    self._sleepers.pop().release()
                return
            self.threads += 1
            self.started += 1
            self.peak_threads = max(self.peak_threads, self.threads)
            name = f"{self.name}-{self.started}"
        try:
            threading.Thread(target=self._work, name=name, daemon=True).start()
        except RuntimeError:  # no thread to be had: the lane stays in line for the next thread that frees up
            with self._mutex:
                self.threads -= 1
            raise

    def _work(self) -> None:
        # Daemon threads: a call stuck past every stop bound must not keep the process alive (SQLite's
        # WAL makes a process that ends mid-transaction the same as one killed: nothing acknowledged lost).
        wake = threading.Lock()
        wake.acquire()  # held while awake; a lane releases it to wake this thread
        counted_idle = False
        while True:
            with self._mutex:
                if not counted_idle:
                    self.idle += 1
                while not self._ready:
                    if not self._sleep(wake) and not self._ready and self.threads > self.min_threads:
                        self.idle -= 1
                        self.threads -= 1
                        return
                self.idle -= 1
                lane = self._ready.popleft()
            counted_idle = lane.run_pending(self._count_idle)

    def _sleep(self, wake: threading.Lock) -> bool:
        """With the mutex held: sleep until a lane wakes this thread (True) or idle_exit_s passes (False)."""
        self._sleepers.append(wake)
        self._mutex.release()
        try:
            woken = wake.acquire(timeout=self.idle_exit_s)
        finally:
            self._mutex.acquire()
        if not woken:
            if wake in self._sleepers:
                self._sleepers.remove(wake)
            else:  # a lane woke it just after the timeout: take the release back, the lane is in line
                wake.acquire()
                woken = True
        return woken

    def _count_idle(self) -> None:
        """A thread is about to answer its lane's last call: idle from now, so the caller's next call finds it.

        Counted before the answer, not after: the caller's next call would otherwise often arrive while
        this thread was still on its way back, find no idle thread, and start another.
        """
        with self._mutex:
            self.idle += 1


class Lane:
    """One connection's calls, in order: run by one pool thread at a time."""

    def __init__(self, pool: DbPool):
        self._pool = pool
        self._calls: deque[Call] = deque()
        self._mutex = threading.Lock()
        self._scheduled = False  # in the pool's ready line or on a thread: calls put now are run by that turn

    def put(self, future: asyncio.Future[Any] | None, fn: Callable[[], Any]) -> None:
        """Queue `fn()`; its result or exception resolves `future` on the future's loop. Safe from any thread."""
        with self._mutex:
            self._calls.append((future, fn))
            if self._scheduled:
                return
            self._scheduled = True
        self._pool.schedule(self)

    def run_pending(self, count_idle: Callable[[], None]) -> bool:
        """On a pool thread: run the calls until none is left (calls put meanwhile are run too).

        Returns True when it called `count_idle` (before answering the last call); False when it
        found the lane empty (a lane scheduled once is always run, so that is only before a first call).
        """
        while True:
            with self._mutex:
                if not self._calls:
                    self._scheduled = False
                    return False
                future, fn = self._calls.popleft()
            setter: Callable[[asyncio.Future[Any], Any], None]
            try:
                result, setter = fn(), _set_result
            except BaseException as exc:  # the caller's to handle; the thread goes on with the next call
                result, setter = exc, set_exception
            with self._mutex:
                last = not self._calls
                if last:
                    self._scheduled = False
            if last:
                count_idle()
            if future is not None:
                _resolve(future, setter, result)
            if last:
                return True


def _resolve(future: asyncio.Future[Any], setter: Callable[[asyncio.Future[Any], Any], None], value: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits for this any more
        future.get_loop().call_soon_threadsafe(setter, future, value)


def _set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # a caller that gave up (a timeout) cancelled it
        future.set_result(result)


def set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    """On the future's loop: fail it unless its caller gave up on it already."""
    if not future.done():
        future.set_exception(exc)


_default: DbPool | None = None
_default_guard = threading.Lock()


def default_pool() -> DbPool:
    """The process's one pool: every AsyncStore of a daemon (one file or a thousand) shares its threads."""
    global _default
    with _default_guard:
        if _default is None:
            _default = DbPool()
        return _default
