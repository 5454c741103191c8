"""One thread that runs a many-companion host's heartbeats: a second's group back to back, while the CPU is warm.

Each companion's calls go to her aiosqlite connection's thread (daemon/db.py), which runs only while
she has work; her beat used to hop onto a thread of its own: 1,000 companions meant ~17 thread wake-ups a
second, each finding a thread's stack and the CPU's caches cold, plus a wake-up of the event loop to
hear back. The lane takes a group in ONE hand-off, runs each beat on her connection in turn
(AsyncStore.run_if_free: the connection's lock keeps it to one thread at a time) and answers the loop
once for the group. The checkpoint a beat leaves due comes back as a group of its own, after the
group that left it (daemon/companion_beat.py), so a companion at rest needs no thread of hers at all.

A companion whose connection is busy (a consolidation, a forget, a long recall) is not waited for: her
beat is queued on her own thread (`enqueue`) and the group goes on, so one slow companion never
delays another's beat. Her own work may also hand a beat back (`Deferred`), e.g. when another
process holds her file's write lock: it then waits its turn on her thread, not on the beat lane.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

STOP_JOIN_S = 5.0


class Deferred(Exception):
    """Raised by a beat on the lane that must run on her own thread instead (it would wait there)."""


@dataclass
class LaneBeat:
    store: Any  # daemon.db.AsyncStore: run_if_free from the beat lane, enqueue on her own thread
    future: asyncio.Future[Any]
    work: Callable[[Any, bool], Any]  # work(conn, on_lane): her beat; Deferred when it must not run on the lane


class BeatLane:
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._queue: queue.SimpleQueue[list[LaneBeat] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="anima-beats", daemon=True)
        self.groups = 0
        self.handed_back = 0  # beats that went to their own thread (busy, or Deferred)

    def start(self) -> None:
        self._thread.start()

    def submit(self, group: list[LaneBeat]) -> None:
        self._queue.put(group)

    def stop(self) -> None:
        """Let the lane finish what it was given, then end its thread (bounded: a stop must complete)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(STOP_JOIN_S)

    def _run(self) -> None:
        while (group := self._queue.get()) is not None:
            outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
            for beat in group:
                try:
                    ran, result = beat.store.run_if_free(beat.work, True)
                except Deferred:
                    ran, result = False, None
                except BaseException as exc:  # her beat's own failure: hers to report, not the lane's
                    outcomes.append((beat.future, None, exc))
                    continue
                if ran:
                    outcomes.append((beat.future, result, None))
                else:
                    self.handed_back += 1
                    beat.store.enqueue(beat.future, beat.work, False)
            self.groups += 1
            if outcomes:
                self._loop.call_soon_threadsafe(_settle, outcomes)


def _settle(outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, result, exc in outcomes:
        if future.done():
            continue
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)
