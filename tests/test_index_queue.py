"""The daemon's one indexing loop (daemon/index_queue.py): companions take turns, and the gate is waited for once a batch.

Fifty loops, one per companion, each waited its own MAX_YIELD_S and together ran fifty batches where
one companion's daemon ran one; these tests pin the one-loop rules, then a host of real companions
draining through it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daemon.index_queue import IndexQueue
from engine.memory.indexer import count_pending
from engine.memory.ingest import TurnInput, record_turn
from engine.store import connect
from tests.api_support import HashEmbedder, RecordingLog
from tests.test_host import make_companion, served
from tests.test_vector_indexer import GatedEmbedder


class CountingGate:
    """The interactive gate as the queue sees it, with a reply always in flight: counts waits, and waits at once."""

    def __init__(self) -> None:
        self.waits = 0
        self.waiting = 0
        self.most_waiting = 0

    async def wait_idle(self, max_wait_s: float) -> None:
        self.waits += 1
        self.waiting += 1
        self.most_waiting = max(self.most_waiting, self.waiting)
        try:
            for _ in range(3):  # yield a few times: other loops, had there been any, would wait alongside
                await asyncio.sleep(0)
        finally:
            self.waiting -= 1


class Companion:
    """A member of the queue with `left` batches pending; records each turn it gets in `order`."""

    def __init__(self, name: str, left: int, order: list[str], log: RecordingLog, fail: bool = False):
        self.name = name
        self.left = left
        self.order = order
        self.stopping = False
        self.fail = fail
        self.ctx = type("Ctx", (), {"log": log})()

    async def index_batch(self, executor: Any) -> bool:
        self.order.append(self.name)
        if self.fail:
            raise OSError("disk I/O error")
        self.left -= 1
        return self.left > 0


async def drained(queue: IndexQueue) -> None:
    async with asyncio.timeout(10):
        while queue.waiting:
            await asyncio.sleep(0)


async def test_companions_take_turns_and_every_batch_waits_for_the_gate_once_one_wait_at_a_time() -> None:
    gate, order, log = CountingGate(), [], RecordingLog()
    queue = IndexQueue(gate)  # type: ignore[arg-type]
    queue.start()
    try:
        members = [Companion("a", 3, order, log), Companion("b", 1, order, log), Companion("c", 2, order, log)]
        for member in members:
            queue.wake(member)
        await drained(queue)
    finally:
        await queue.stop()
    assert order == ["a", "b", "c", "a", "c", "a"]  # round robin: a's backlog does not hold back b and c
    assert gate.waits == queue.batches == 6
    assert gate.most_waiting == 1  # the background share does not grow with the number of companions


async def test_waking_a_companion_already_waiting_keeps_her_one_place() -> None:
    gate, order, log = CountingGate(), [], RecordingLog()
    queue = IndexQueue(gate)  # type: ignore[arg-type]
    a, b = Companion("a", 1, order, log), Companion("b", 1, order, log)
    for member in (a, b, a, a):
        queue.wake(member)
    queue.start()
    try:
        await drained(queue)
    finally:
        await queue.stop()
    assert order == ["a", "b"]


async def test_a_failing_batch_is_logged_by_kind_and_the_other_companions_go_on() -> None:
    gate, order, log = CountingGate(), [], RecordingLog()
    queue = IndexQueue(gate)  # type: ignore[arg-type]
    queue.start()
    try:
        for member in (Companion("bad", 5, order, log, fail=True), Companion("ok", 2, order, log)):
            queue.wake(member)
        await drained(queue)
    finally:
        await queue.stop()
    assert order == ["bad", "ok", "ok"]  # not retried until she is woken again (her next beat)
    failed = [kw for _, event, kw in log.events if event == "memory.index_failed"]
    assert failed == [{"error": "OSError"}]


class RecordingEmbedder(GatedEmbedder):
    """The indexer tests' gated model, also recording which texts each call got, and two calls at once."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[list[str]] = []
        self.inside = 0
        self.overlapped = False
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.inside += 1
            self.overlapped |= self.inside > 1
            self.texts.append(list(texts))
        try:
            return super().embed_passages(texts)
        finally:
            with self._lock:
                self.inside -= 1


def pending_turns(path: Path, handle: str, turns: int) -> None:
    """`turns` turns written without vectors (as POST /v1/turns writes them), each text naming `handle`."""
    conn = connect(path)
    try:
        for i in range(turns):
            record_turn(conn, HashEmbedder(), TurnInput(f"{handle}-{i}", f"{handle} 的第{i}句话", f"{handle} 回复{i}",
                                                        "2026-06-01T22:00:00+08:00"), 1.8e9, embed=False)
    finally:
        conn.close()


def pending_of(path: Path) -> int:
    conn = connect(path, readonly=True)
    try:
        return count_pending(conn)
    finally:
        conn.close()


async def test_a_host_drains_every_companion_through_one_loop_and_a_closing_companion_waits_for_her_batch(
        tmp_path: Path) -> None:
    handles = ("a1", "b2", "c3")
    for handle in handles:
        pending_turns(make_companion(tmp_path, handle), handle, 2)
    model = RecordingEmbedder()
    async with served(tmp_path, embedder=model) as (host, _clock):  # each first drain finds her rows pending
        assert {id(r.indexer.queue) for r in host.runtimes.values() if r.indexer} == {id(host.shared.index_queue)}
        async with asyncio.timeout(10):
            while not model.texts:
                await asyncio.sleep(0)
        first = model.texts[0][0].split(" ")[0]  # whose batch is in flight
        closing = asyncio.ensure_future(host._close_one(first, "test"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not closing.done()  # her close waits for the batch on the indexing thread
        model.gate.set()
        await asyncio.wait_for(closing, 10)
        others = [h for h in handles if h != first]
        async with asyncio.timeout(10):
            while any(pending_of(tmp_path / f"{h}.db") for h in others):
                await asyncio.sleep(0.01)
        assert not model.overlapped  # one indexing thread: one batch at a time, whoever's it is
        assert pending_of(tmp_path / f"{first}.db") == 4  # the batch she stopped under was not written
        assert all(call[0].split(" ")[0] != first for call in model.texts[1:])  # no turn after she closed
