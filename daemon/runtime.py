"""One companion served by a many-companion host: open (lock, recover, connect), her beats, close.

`anima run --dir` (daemon/host.py) serves a thousand files from one process. Her beat is the same
list of steps as single-file mode's (daemon/beat.py), run the same way (daemon/companion_beat.py):
ONE call on her connection, one write transaction, since a thread hop costs ~0.1 ms of CPU and 1,000
companions beating every 60 s must fit in 2 % of a core. The host runs that call on its beat lane
(daemon/beat_lane.py: one thread, a second's group back to back) when her connection is idle, and on
her connection's own thread when it is not; the job and checkpoint steps come round every few beats here.

What is shared (the embedding model, the indexing loop and its thread, the job slots, the interactive gate,
the beat lane) comes in as `Shared`; what is hers (lock, connection and its aiosqlite thread, persona,
indexer watermark, event cursor) lives here, so a slow companion only ever blocks her own thread (the beat
lane never waits for her).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.app import prepare_database
from daemon.beat import BeatResult
from daemon.beat_lane import BeatLane
from daemon.checkpoint import hand_over_checkpoints
from daemon.clock import Clock
from daemon.companion_beat import ApiBeat, CompanionBeat, record_stop
from daemon.component import DaemonContext
from daemon.db import AsyncStore
from daemon.index_queue import IndexQueue
from daemon.life_component import resume_life
from daemon.memory_component import VectorIndexer
from daemon.priority import InteractiveGate
from daemon.worker import SharedWorker, recover_at_start
from engine.errors import StoreError
from engine.home import her_settings
from engine.settings import Settings
from engine.store import oplog, transaction
from engine.store.connect import connect
from engine.store.core import get_companion, read_switches, set_companion_handle
from engine.store.lock import DaemonLock
from engine.store.types import Conn

# SQLite's page cache per connection (default 2 MiB): a thousand of them could hold 2 GB of pages that
# the OS page cache keeps anyway (a miss is a 4 KiB pread from RAM, microseconds). A beat touches ~14
# pages and 64 KiB kept 12 of them, yet beats cost the same with 16 KiB (1.80 % against 1.89 % of a core
# for the whole host, 1,000 companions, one run each) and RSS was 24 MB lower; recall's scans go to the
# OS cache either way. RSS is then bounded by config. Her connection has no lookaside pool either
# (engine/store/lookaside.py: 32 KiB a connection, for a hundredth of a millisecond a beat).
PAGE_CACHE_KIB = 16
# A PASSIVE checkpoint copies the beat's few pages and fsyncs the file: 0.35 ms of CPU and ~4 ms of the
# thread it runs on (measured here), more than the rest of the beat. Every 8th beat (2 min at 15 s)
# it is 0.04 ms a beat, and her WAL holds at most ~8 beats of pages (plus her chats, which the size
# bound below still caps at WAL_SOFT_LIMIT_BYTES, checked every beat).
CHECKPOINT_EVERY_BEATS = 8
# The job schedule (her sleep, the cron hour, a backlog of 50 episodes) and a retry's backoff (>= 30 s)
# are minutes-coarse: asking every 4th beat (1 min at 15 s) instead of every beat saves 0.15 ms a beat.
JOBS_EVERY_BEATS = 4


@dataclass
class Shared:
    """What every companion of one host uses together: built once by the host, handed to each runtime."""

    embedder: Any
    index_queue: IndexQueue  # the one indexing loop and thread, every companion's turn in it
    worker: SharedWorker  # bounded job slots across companions
    gate: InteractiveGate  # the one interactive gate: background work yields to any companion's reply
    api: ApiBeat | None = None  # the API's share of each beat, once the API listens
    beat_lane: BeatLane | None = None  # the one thread her beats and their checkpoints run on (the host starts it)
    socket: str = ""  # the host's API socket, recorded in each companion's start event (status and doctor read it)


def _tune_connection(conn: Conn) -> None:
    hand_over_checkpoints(conn)  # her checkpoints run at her beat (daemon/beat.checkpoint_mode), never inside a request


def _check_handle(db_path: Path, handle: str, companion: dict[str, Any] | None) -> None:
    """StoreError when her file holds another companion than its name says."""
    if companion is not None and companion.get("handle") not in (None, handle):
        raise StoreError(f"{db_path.name} holds companion {companion['handle']!r}, not {handle!r}: "
                         f"rename the file to {companion['handle']}.db or restore the right one")


def _check_handle_read_only(db_path: Path, handle: str) -> None:
    """_check_handle on a read-only connection; a file it cannot read is left to prepare_database's checks."""
    if not db_path.exists():
        return
    reader = connect(db_path, readonly=True)
    try:
        try:
            companion = get_companion(reader)
        except Exception:  # damaged, not anima's, no companion table yet: prepare_database says which
            return
    finally:
        reader.close()
    _check_handle(db_path, handle, companion)


def _claim_handle(conn: Conn, handle: str) -> dict[str, Any] | None:
    """Record `handle` on a file that has none yet (a single-file companion moved into the directory)."""
    companion = get_companion(conn)
    if companion is not None and companion.get("handle") is None:
        with transaction(conn):
            set_companion_handle(conn, handle)
        companion = get_companion(conn)
    return companion


class CompanionRuntime:
    """One served companion: her lock, connection, context and beats."""

    def __init__(self, handle: str, db_path: Path, settings: Settings, clock: Clock, log: Any, shared: Shared):
        self.handle = handle
        self.db_path = db_path
        self.settings = settings
        self.clock = clock
        self.log = log
        self.shared = shared
        self.lock = DaemonLock(db_path)
        self.ctx: DaemonContext | None = None
        self.heart: CompanionBeat | None = None
        self.indexer: VectorIndexer | None = None
        self.schema = 0  # her file's schema version once open

    @property
    def beats(self) -> int:
        return self.heart.beats if self.heart is not None else 0

    @property
    def beating(self) -> bool:
        return self.heart is not None and self.heart.beating

    @property
    def last_lag_ms(self) -> float:
        return self.heart.last_lag_ms if self.heart is not None else 0.0

    def heartbeat_stats(self) -> dict[str, Any]:
        return self.heart.stats() if self.heart is not None else {"beats": 0, "clock_steps": 0}

    async def open(self) -> None:
        """Lock, check, migrate, record the gap, connect, resume her life: raises (AnimaError) when she cannot be served."""
        self.lock.acquire()
        try:
            await self._open_locked()
        except BaseException:
            if self.ctx is not None:
                await self.ctx.store.close()
                self.ctx = None
            self.lock.release()
            raise

    async def _open_locked(self) -> None:
        now, mono = self.clock.now(), self.clock.monotonic()
        # A file she cannot be served from is refused before anything is written into it (issue 25: a copy
        # under another handle got a start and a gap event at every scan though it was "left as found").
        await asyncio.to_thread(_check_handle_read_only, self.db_path, self.handle)
        served_by = {"mode": "directory", "handle": self.handle, "socket": self.shared.socket}
        recovered = await asyncio.to_thread(prepare_database, self.db_path, self.settings, now, self.log, served_by)
        self.schema = int(recovered["schema"])
        store = await AsyncStore(self.db_path, cache_kib=PAGE_CACHE_KIB, lookaside=False).open()
        shared = self.shared
        ctx = DaemonContext(settings=self.settings, db_path=self.db_path, clock=self.clock, store=store,
                            log=self.log, started_at=now, last_beat_at=now, embedder=shared.embedder,
                            interactive_gate=shared.gate, last_beat_before_start=recovered["last_beat_at"])
        self.ctx = ctx
        await store.call(_tune_connection)
        companion = await store.call(_claim_handle, self.handle)
        _check_handle(self.db_path, self.handle, companion)
        ctx.companion = companion
        self.settings = ctx.settings = her_settings(self.settings, companion)  # her city, zone and role
        ctx.last_beat_mono = mono
        ctx.switches = await store.call(read_switches)
        ctx.controls = ctx.switches.legacy()
        # Where her jobs and checkpoint beats fall in the cycle: companions opened together would otherwise
        # all run them in the same minute (a thousand jobs steps at once every 4th, checkpoints every 8th).
        heart = CompanionBeat(ctx, self.log, handle=self.handle, worker=lambda: shared.worker,
                              api=lambda: shared.api, lane=lambda: shared.beat_lane, jobs_every=JOBS_EVERY_BEATS,
                              checkpoint_every=CHECKPOINT_EVERY_BEATS,
                              cycle_offset=zlib.crc32(self.handle.encode()) % (JOBS_EVERY_BEATS * CHECKPOINT_EVERY_BEATS))
        heart.event_cursor = await store.call(oplog.start_cursor)
        await resume_life(ctx, now)
        await recover_at_start(ctx, now)
        self.indexer = VectorIndexer(ctx, shared.embedder, queue=shared.index_queue)
        ctx.vector_indexer = self.indexer
        self.indexer.start()  # the first drain scans from id 0: rows a crash left pending
        heart.restart_from(now, mono)
        self.heart = heart

    async def beat(self, due_mono: float) -> float:
        """One heartbeat on her own thread; returns its lag in ms (how late it started against its due time)."""
        assert self.heart is not None
        await self.heart.beat(due_mono)
        return self.heart.last_lag_ms

    def prepare_beat(self, due_mono: float) -> tuple[asyncio.Future[Any], Callable[[Conn, bool], BeatResult]]:
        """Her next beat as (future, work) for the host's beat lane (daemon/companion_beat.CompanionBeat.prepare)."""
        assert self.heart is not None
        return self.heart.prepare(due_mono)

    async def close(self) -> None:
        """Stop her indexer, record a clean stop, close the connection (its last checkpoint), release the lock."""
        ctx, self.ctx = self.ctx, None
        try:
            if self.heart is not None:  # a beat dispatched to the lane: let it land before she closes
                await self.heart.settle()
            if self.indexer is not None:
                await self.indexer.stop()
                self.indexer = None
            if ctx is not None:
                await record_stop(ctx, self.log)
        finally:
            self.lock.release()
