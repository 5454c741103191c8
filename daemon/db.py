"""The daemon's async handle on its database: engine functions run on aiosqlite's one worker thread.

Engine store functions are plain synchronous `fn(conn, ...)`; the daemon must not block its event
loop on SQLite, and one connection must be used from one thread. aiosqlite already owns exactly
that thread, so `call()` queues the function onto it (through aiosqlite's `_execute`, the one
private entry point we use; the version range in pyproject.toml pins it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from engine.store import connect

T = TypeVar("T")


class AsyncStore:
    def __init__(self, path: Path):
        self.path = path
        self._aconn: aiosqlite.Connection | None = None

    async def open(self) -> AsyncStore:
        self._aconn = aiosqlite.Connection(
            lambda: connect(self.path, check_same_thread=False), iter_chunk_size=64
        )
        await self._aconn
        return self

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on the database thread and return its result."""
        assert self._aconn is not None, "AsyncStore.open() first"
        aconn = self._aconn

        def run() -> T:
            return fn(aconn._conn, *args, **kwargs)

        return await aconn._execute(run)

    async def close(self) -> None:
        if self._aconn is not None:
            await self._aconn.close()
            self._aconn = None
