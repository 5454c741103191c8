"""Background work yields to replies being prepared, but never starves."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from daemon.priority import InteractiveGate, gate_of


async def test_background_waits_while_a_request_is_served_and_resumes_after() -> None:
    gate = InteractiveGate()
    async with gate.serving():
        waiter = asyncio.create_task(gate.wait_idle(max_wait_s=60))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not waiter.done()
    await asyncio.wait_for(waiter, timeout=5)
    assert gate.inflight == 0


async def test_background_is_not_starved_by_sustained_requests() -> None:
    gate = InteractiveGate()
    async with gate.serving():
        await asyncio.wait_for(gate.wait_idle(max_wait_s=0.01), timeout=5)  # returns although still busy
        assert gate.inflight == 1


async def test_nested_requests_keep_the_gate_closed_until_the_last_ends() -> None:
    gate = InteractiveGate()
    async with gate.serving():
        async with gate.serving():
            assert gate.inflight == 2
        waiter = asyncio.create_task(gate.wait_idle(max_wait_s=60))
        await asyncio.sleep(0)
        assert not waiter.done()
    await asyncio.wait_for(waiter, timeout=5)


def test_one_gate_per_daemon() -> None:
    ctx = SimpleNamespace(interactive_gate=None)
    assert gate_of(ctx) is gate_of(ctx)
