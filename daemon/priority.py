"""Requests before background work: a gate that background tasks wait on while a reply is being prepared.

The chat server waits on `/v1/context` with a person on the other side; the vector indexer and other
background work can wait a moment. On two cores they otherwise compete for the CPU and the one DB
thread, and a context request queues behind a batch of passage embeddings.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Protocol


class InteractiveGate:
    def __init__(self) -> None:
        self.inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Mark one interactive request in flight for the duration of the block."""
        self.inflight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self.inflight -= 1
            if self.inflight == 0:
                self._idle.set()

    async def wait_idle(self, max_wait_s: float) -> None:
        """Wait until no request is in flight, but at most `max_wait_s`: background work must not starve."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max_wait_s):
                await self._idle.wait()


class HasGate(Protocol):
    interactive_gate: InteractiveGate | None


def gate_of(ctx: HasGate) -> InteractiveGate:
    """The daemon's one gate (a host sets it on every companion's context), created on first use."""
    if ctx.interactive_gate is None:
        ctx.interactive_gate = InteractiveGate()
    return ctx.interactive_gate
