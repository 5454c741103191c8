"""One indexing loop per daemon: every companion's lagging vectors, a batch at a time, one gate wait each.

A host of many companions once ran one loop per companion, each waiting its own MAX_YIELD_S for the
interactive gate. Under chat load fifty loops each ran a batch every 2 s where a one-companion
daemon ran one, and background indexing took twice the CPU share (bench/many.py counted 0.83
against 0.40 passages embedded per exchange), which the replies paid for. One loop waits for the
gate once per batch for the whole daemon, so the background share is the same whatever the number
of companions. Companions take turns (round robin): one with a long backlog (`anima ingest
--defer-embedding`) does not hold back another's newest turn.

The loop runs on the event loop; a companion's batch (daemon/memory_component.py VectorIndexer)
reads and writes on her DB lane and embeds on the one indexing thread here, at idle priority.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from daemon.logs import get_logger
from daemon.priority import InteractiveGate

STOP_WAIT_S = 3.0  # the longest a stop waits for the batch in flight
MAX_YIELD_S = 2.0  # under sustained chat load the indexer still runs a batch at least every 2 s
INDEXER_NICE = 10


class Batched(Protocol):
    """A companion's share of the queue (daemon/memory_component.py VectorIndexer)."""

    stopping: bool
    ctx: Any

    async def index_batch(self, executor: Any) -> bool:
        """Index one batch; True when more may be pending."""


def _lower_priority() -> None:
    """Run the indexer thread only on CPU that requests leave idle (Linux: per-thread SCHED_IDLE).

    Nice +10 still gave the indexer a tenth of a contended core, and a reply's two-thread query
    embedding waited on it; a SCHED_IDLE thread is preempted at once. Where that is not allowed,
    nice +10; elsewhere vectors compete fairly.
    """
    tid = threading.get_native_id()
    errors = []
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError) as exc:
        errors.append(type(exc).__name__)
    try:
        os.setpriority(os.PRIO_PROCESS, tid, INDEXER_NICE)
        return
    except (AttributeError, OSError) as exc:
        errors.append(type(exc).__name__)
    # Said once per indexer thread: replies then compete with vector work (e.g. a seccomp filter
    # that forbids both calls; the systemd units allow them).
    get_logger().warning("indexer.priority_refused", errors=errors)


def index_executor() -> ThreadPoolExecutor:
    """The indexing thread: one, at idle CPU priority (see _lower_priority)."""
    return ThreadPoolExecutor(1, thread_name_prefix="memory-index", initializer=_lower_priority)


class IndexQueue:
    """The daemon's one indexing loop: woken companions in turn, each batch after the gate lets it."""

    def __init__(self, gate: InteractiveGate, max_yield_s: float = MAX_YIELD_S):
        self.gate = gate
        self.max_yield_s = max_yield_s
        self.executor = index_executor()
        self.waiting: dict[Batched, None] = {}  # woken companions, in the order they take their turns
        self.woken = asyncio.Event()
        self.stopping = False
        self.batches = 0  # batches run, every companion's together
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="memory-indexer")

    def wake(self, member: Batched) -> None:
        """Give `member` a turn (once: waking a companion already waiting keeps her place)."""
        self.waiting.setdefault(member, None)
        self.woken.set()

    def forget(self, member: Batched) -> None:
        """Drop `member`'s turn (she is stopping); a batch of hers already running finishes."""
        self.waiting.pop(member, None)

    async def _run(self) -> None:
        while not self.stopping:
            if not self.waiting:
                self.woken.clear()
                await self.woken.wait()
                continue
            await self.gate.wait_idle(self.max_yield_s)
            if self.stopping or not self.waiting:
                continue
            member = next(iter(self.waiting))
            del self.waiting[member]
            try:
                more = await member.index_batch(self.executor)
            except Exception as exc:  # a failed batch stays pending; her next wake or beat retries it
                member.ctx.log.warning("memory.index_failed", error=type(exc).__name__)
                more = False
            self.batches += 1
            if more and not member.stopping:
                self.waiting.setdefault(member, None)  # to the back of the line

    async def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """End the loop after the batch in flight (one embedding call and one short write), waiting at most
        `wait_s`: an idle-priority embedding starved by a busy machine must not hold up a stop (the batch
        then writes nothing and its rows stay pending for the next start)."""
        self.stopping = True
        self.woken.set()
        if self.task is not None:
            task, self.task = self.task, None
            try:
                async with asyncio.timeout(wait_s):
                    await asyncio.shield(task)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self.executor.shutdown(wait=False)
