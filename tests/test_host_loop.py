"""The host's watch loop under a scan that outlasts `watch_s`: it waits for the scan instead of spinning.

A `.stop` marker makes the scan close her; the close waits (bounded) for her vector batch in flight,
which embeds at idle CPU priority and so, on a busy machine, may not run for seconds. With the next
watch due meanwhile, the loop once went round without ever yielding to the event loop: the close it
waited for could not finish, nor could anything else (her lock was never released). The gated model
stands for that CPU; a tick counter turns a spin into a failure rather than a hung test.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from daemon.clock import FakeClock
from engine.memory.ingest import TurnInput, record_turn
from engine.store import connect
from engine.store.lock import is_locked
from tests.api_support import T0
from tests.test_host import make_companion, make_host
from tests.test_vector_indexer import GatedEmbedder

SPIN = 500  # ticks: far more than a few seconds of watches at 0.5 s could need


async def test_a_scan_longer_than_watch_s_is_waited_for_not_spun_on(tmp_path: Path) -> None:
    path = make_companion(tmp_path, "a1")
    conn = connect(path)
    record_turn(conn, GatedEmbedder(), TurnInput("t1", "下周去上海面试", "我陪你准备", "2026-06-01T22:00:00+08:00"),
                T0, embed=False)  # pending vectors: her indexer's first batch starts at once and blocks on the model
    conn.close()
    model = GatedEmbedder()
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, model, watch_s=0.5)
    await host.start()
    ticks = 0
    real_tick = host._tick

    async def counted(beats: bool, background: bool) -> None:
        nonlocal ticks
        ticks += 1
        if ticks > SPIN:
            raise RuntimeError("the host loop spins without yielding")
        await real_tick(beats, background)

    host._tick = counted  # type: ignore[method-assign]
    try:
        while model.calls == 0:  # her batch is embedding (blocked)
            await asyncio.sleep(0.01)
        (tmp_path / "a1.stop").touch()
        clock.advance(1.0)  # a watch is due: its scan closes her, and waits for her batch
        loop = asyncio.create_task(host._loop())
        while "a1" in host.runtimes:
            await asyncio.sleep(0.01)
        clock.advance(5.0)  # the next watch is due while that scan still runs
        while is_locked(path):  # the close finishes (past its bound on the batch) and lets her file go
            assert not loop.done(), loop.exception()
            await asyncio.sleep(0.05)
        assert not loop.done() and ticks < SPIN
    finally:
        model.gate.set()
        host._stop_soon()
        await asyncio.wait_for(asyncio.shield(loop) if "loop" in locals() else asyncio.sleep(0), 10)
        await host.shutdown()


