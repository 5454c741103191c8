"""The memory part of the daemon: create the embedder once at start, warm it, publish it as ctx.services["embedder"]."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from daemon.component import DaemonContext
from engine.memory.embed import make_embedder


class MemoryComponent:
    name = "memory"

    async def start(self, ctx: DaemonContext) -> None:
        started = time.monotonic()
        # Model load and the first inference take tens of ms; do them off the event loop, once.
        embedder = await asyncio.to_thread(self._load, ctx)
        ctx.services["embedder"] = embedder
        ctx.log.info("memory.embedder_ready", model=embedder.name, dim=embedder.dim,
                     ms=round(1000 * (time.monotonic() - started), 1))

    @staticmethod
    def _load(ctx: DaemonContext) -> Any:
        embedder = make_embedder(ctx.settings.memory)
        embedder.embed_queries(["warm up"])
        return embedder

    async def beat(self, ctx: DaemonContext, now: float, dt: float) -> None:
        return None

    async def stop(self, ctx: DaemonContext) -> None:
        ctx.services.pop("embedder", None)


def build(ctx: DaemonContext) -> MemoryComponent:
    return MemoryComponent()
