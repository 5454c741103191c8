"""One companion served by a many-companion host: open (lock, recover, connect), one batched beat, close.

`anima run --dir` (daemon/host.py) serves a thousand files from one process, so what single-file mode
spreads over a dozen thread hops per heartbeat (switch read, life step, beat record, offer expiry, job
schedule and claim, lease recovery, checkpoint, each one `await store.call`) is here ONE call
(`beat_batch`): a hop costs ~0.1 ms of CPU, and 1,000 companions beating every 60 s must fit in 2 % of
a core. The host runs that call on its beat lane (daemon/beat_lane.py: one thread, a second's group
back to back) when her connection is idle, and on her lane of the DB pool when it is not. The life step is
the same function as single-file mode's (engine/inner.step_inner), so she lives the same life whichever
way she is served.

What is shared (the embedding model, the indexing loop and its thread, the job slots, the interactive gate)
comes in as `Shared`; what is hers (lock, connection and its lane, persona, indexer watermark,
event cursor) lives here, so a slow companion only ever blocks her own lane (the beat lane never waits for her;
the DB pool starts a thread when every one is busy).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon.app import prepare_database
from daemon.beat_lane import Deferred
from daemon.checkpoint import WAL_SOFT_LIMIT_BYTES, hand_over_checkpoints
from daemon.clock import Clock, wall_step
from daemon.component import DaemonContext
from daemon.db import AsyncStore
from daemon.db_pool import DbPool
from daemon.memory_component import VectorIndexer
from engine import jobs
from engine.control import CHANGED_EVENT, DEPRECATED_EVENT
from engine.errors import StorageFullError, StoreError
from engine.home import her_settings
from engine.inner import JUMP_IS_GAP_S, inner_snapshot, resume_after_gap, resume_after_jump, step_inner
from engine.jobs import registry, schedule
from engine.persona import Persona, persona_of_companion
from engine.settings import Settings
from engine.store import memory as memory_store
from engine.store import oplog, transaction
from engine.store.connect import BUSY_TIMEOUT_MS, connect, store_fault
from engine.store.core import (
    daemon_beat,
    daemon_stopped,
    get_companion,
    log_event,
    read_switches,
    set_companion_handle,
)
from engine.store.lock import DaemonLock
from engine.store.share import expire_offers, next_offer_expiry

STOP_STEP_TIMEOUT_S = 3.0
SQLITE_BUSY, SQLITE_LOCKED = 5, 6
# SQLite's page cache per connection (default 2 MiB): a thousand of them could hold 2 GB of pages that
# the OS page cache keeps anyway (a miss is a 4 KiB pread from RAM, microseconds). A beat touches ~14
# pages and 64 KiB kept 12 of them, yet beats cost the same with 16 KiB (1.80 % against 1.89 % of a core
# for the whole host, 1,000 companions, one run each) and RSS was 24 MB lower; recall's scans go to the
# OS cache either way. RSS is then bounded by config. Her connection has no lookaside pool either
# (engine/store/lookaside.py: 32 KiB a connection, for a hundredth of a millisecond a beat).
PAGE_CACHE_KIB = 16
# A PASSIVE checkpoint copies the beat's few pages and fsyncs the file: 0.35 ms of CPU and ~4 ms of her
# DB lane each time (measured here), more than the rest of the beat. Every 8th beat (2 min at 15 s)
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
    index_queue: Any  # daemon.index_queue.IndexQueue: the one indexing loop and thread, every companion's turn in it
    worker: Any  # daemon.worker.SharedWorker: bounded job slots across companions
    services: dict[str, Any] = field(default_factory=dict)  # e.g. the one interactive gate
    api: Any = None  # daemon.host.ApiBeat once the API listens: its step joins each beat's batch
    db_pool: DbPool = field(default_factory=DbPool)  # the threads every companion's connection calls run on
    socket: str = ""  # the host's API socket, recorded in each companion's start event (status and doctor read it)


@dataclass(frozen=True)
class BeatInput:
    now: float
    wall: float
    lag_ms: float
    event_cursor: int
    indexed_upto: int
    jobs: bool  # this beat schedules due jobs and (with claim_owner) claims a ready one
    claim_owner: str | None  # a job slot is free: claim a ready job under this owner
    lease_s: float
    backoff_s: tuple[float, ...]
    db_path: str
    api_step: Any  # the API's part of the beat (her token digests), a function of the connection, or None
    checkpoint: bool  # a PASSIVE checkpoint is due this beat (a TRUNCATE one whenever the WAL is past its bound)
    clock_step: tuple[float, float] | None  # (step_s, elapsed_s) when the wall clock was stepped since the last beat
    checkpoint_here: bool = True  # False on the beat lane: a due checkpoint (an fsync) is left to her lane
    # What the last beat left (BeatResult.seen, .switches, .memory_high): when nothing was written to her file
    # since, by another process (data_version) or on her own connection (total_changes), this beat reuses them.
    seen: tuple[int, int] | None = None
    switches: Any = None
    memory_high: int = 0
    offers_due_at: float | None = None  # when her first open offer expires (None: none open)


@dataclass
class BeatResult:
    """What one batched beat did, for the event loop to log and act on (no text, only ids and counts)."""

    switches: Any = None
    life: dict[str, Any] | None = None
    writes: list[dict[str, Any]] = field(default_factory=list)
    expired_offers: int = 0
    scheduled: Any = None
    recovered: list[dict[str, Any]] = field(default_factory=list)
    job: Any = None
    vectors_waiting: bool = False
    api: Any = None
    checkpoint_mode: str | None = None  # the checkpoint due after this beat (PASSIVE, TRUNCATE), None when none is
    checkpoint: tuple[int, int, int] | None = None  # (busy, frames, copied) of the one run, when it ran here
    beat_recorded: bool = False
    errors: list[tuple[str, BaseException]] = field(default_factory=list)
    seen: tuple[int, int] | None = None  # (PRAGMA data_version, total_changes) after this beat; None: re-read all next time
    fresh: bool = True  # this beat re-read what only a write changes (switches, others' events, tokens, memory ids)
    memory_high: int = 0  # the highest memory id as of this beat
    offers_due_at: float | None = None  # when her first open offer expires as of this beat (None: none open)
    now: float = 0.0  # her clock when the beat ran
    lag_ms: float = 0.0  # how late it started against its due time
    clock_step: tuple[float, float] | None = None


def beat_on(conn: Any, settings: Settings, persona: Persona | None, has_companion: bool, beat: BeatInput,
            on_lane: bool) -> BeatResult:
    """`beat_batch` on her lane, or on the host's beat lane (daemon/beat_lane.py), where nothing may wait.

    On the lane, her write lock is taken without the busy timeout: when another process holds it (an
    `anima` command writing her file), the beat is handed back (Deferred) to wait on her lane,
    and a due checkpoint (an fsync) is left to her lane too.
    """
    if not on_lane:
        return _timed(beat_batch(conn, settings, persona, has_companion, beat), beat)
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        result = beat_batch(conn, settings, persona, has_companion, dataclasses.replace(beat, checkpoint_here=False))
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if result.switches is None and any(_busy(exc) for _, exc in result.errors):
        raise Deferred(f"{beat.db_path} is locked by another writer")
    return _timed(result, beat)


def _timed(result: BeatResult, beat: BeatInput) -> BeatResult:
    result.now, result.lag_ms, result.clock_step = beat.now, beat.lag_ms, beat.clock_step
    return result


def _busy(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and int(code) & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)


def beat_batch(conn: Any, settings: Settings, persona: Persona | None, has_companion: bool,
               beat: BeatInput) -> BeatResult:
    """A companion's whole heartbeat on her connection, in ONE write transaction, each step in a savepoint.

    Order follows single-file mode: switches first (every later step obeys this beat's values), then
    the recorded writes, the life step, offers, jobs, vectors, the beat record; the checkpoint after
    the commit. One commit instead of five saves ~0.15 ms of CPU and WAL frames a beat; the savepoints
    keep single-file mode's isolation: a step that fails is rolled back alone and logged, the others
    land. A commit that fails (a full disk) lands nothing, so nothing it claimed is acted on.
    """
    out = BeatResult()
    fault_path = Path(beat.db_path)

    def attempt(step: str, fn: Any, *args: Any) -> Any:
        """A read or a single statement: nothing to undo when it fails."""
        try:
            return fn(*args)
        except Exception as exc:  # one failing step must not stop her heart (nor the other steps)
            out.errors.append((step, store_fault(exc, fault_path) or exc))
            return None

    def guarded(step: str, fn: Any, *args: Any) -> Any:
        """A step of several writes: in a savepoint, so a failure half-way is rolled back alone."""
        conn.execute("SAVEPOINT beat_step")
        try:
            result = fn(*args)
        except Exception as exc:  # one failing step must not stop her heart (nor the other steps)
            conn.execute("ROLLBACK TO beat_step")
            conn.execute("RELEASE beat_step")
            out.errors.append((step, store_fault(exc, fault_path) or exc))
            return None
        conn.execute("RELEASE beat_step")
        return result

    try:
        conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:
        out.errors.append(("beat", store_fault(exc, fault_path) or exc))
        return out
    try:
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        out.fresh = beat.seen is None or beat.seen != (version, conn.total_changes) or beat.switches is None
        out.switches = attempt("switches", read_switches, conn) if out.fresh else beat.switches
        if out.switches is not None:
            _steps(conn, settings, persona, has_companion, beat, out, attempt, guarded)
        conn.execute("COMMIT")
        out.seen = None if out.errors else (version, conn.total_changes)
    except Exception as exc:
        with contextlib.suppress(Exception):
            conn.execute("ROLLBACK")
        return BeatResult(switches=out.switches, errors=[*out.errors, ("beat", store_fault(exc, fault_path) or exc)])
    out.checkpoint_mode = attempt("checkpoint", checkpoint_mode, f"{beat.db_path}-wal", beat.checkpoint)
    if out.checkpoint_mode is not None and beat.checkpoint_here:
        out.checkpoint = attempt("checkpoint", run_checkpoint, conn, out.checkpoint_mode)
    return out


def _steps(conn: Any, settings: Settings, persona: Persona | None, has_companion: bool, beat: BeatInput,
           out: BeatResult, attempt: Any, guarded: Any) -> None:
    if beat.clock_step is not None:
        step_s, elapsed_s = beat.clock_step
        attempt("clock", lambda: log_event(conn, beat.now, "clock_stepped", step_s=step_s, elapsed_s=elapsed_s))
    # A quiet beat (nothing written since the last one) skips the reads that only a write can change: a
    # thousand idle companions then cost four statements a beat less. Time-driven steps (life, offers, jobs)
    # run every beat.
    if out.fresh:
        out.writes = attempt("oplog", oplog.writes_after, conn, beat.event_cursor) or []
    jumped = beat.clock_step is not None and beat.clock_step[0] >= JUMP_IS_GAP_S
    if has_companion and jumped and beat.clock_step is not None:
        # Issue 24: a wall clock stepped forward while she runs is time she did not live, as after downtime:
        # one gap event, mood and energy stepped over it in closed form, her day picked up from now (a month
        # jumped in one beat used to be lived as ~500 invented activities).
        guarded("life", resume_after_jump, conn, settings, persona, beat.clock_step[0], beat.now)
    elif has_companion:
        out.life = guarded("life", step_inner, conn, settings, persona, beat.now, out.switches)
    out.offers_due_at = beat.offers_due_at
    if out.fresh or (beat.offers_due_at is not None and beat.now >= beat.offers_due_at):
        expired = attempt("share", _expire_offers, conn, beat.now)
        if expired is not None:
            out.expired_offers, out.offers_due_at = expired
    if beat.jobs and out.switches.consolidation:
        out.scheduled = guarded("schedule", schedule.enqueue_due, conn, beat.now, settings)
    if beat.jobs and beat.claim_owner is not None:
        out.recovered = guarded("jobs", jobs.recover_interrupted, conn, beat.now, jobs.REASON_LEASE,
                                list(beat.backoff_s), [beat.claim_owner]) or []
        out.job = guarded("jobs", _claim, conn, beat.claim_owner, beat.now, beat.lease_s)
    high = attempt("memory", memory_store.max_memory_id, conn) if out.fresh else beat.memory_high
    out.memory_high = int(high) if high is not None else beat.memory_high
    out.vectors_waiting = high is not None and int(high) > beat.indexed_upto  # re-woken every beat while so
    if beat.api_step is not None and out.fresh:
        out.api = attempt("api", beat.api_step, conn)
    attempt("beat", daemon_beat, conn, beat.now, beat.wall, beat.lag_ms)
    out.beat_recorded = not _failed(out, "beat")


def _expire_offers(conn: Any, now: float) -> tuple[int, float | None]:
    """Close her offers past their time; (how many, when the first one still open expires)."""
    return expire_offers(conn, now), next_offer_expiry(conn)


def _failed(out: BeatResult, step: str) -> bool:
    return any(name == step for name, _ in out.errors)


def _claim(conn: Any, owner: str, now: float, lease_s: float) -> Any:
    return jobs.claim(conn, owner, now, lease_s, kinds=registry.kinds())


def checkpoint_mode(wal_path: str, due: bool) -> str | None:
    """PASSIVE every few beats (`due`); TRUNCATE once the WAL is past its bound (daemon/checkpoint.py says why).

    On the companion's own connection: a thousand checkpointer threads with a 1 s watcher each would
    cost more than the companions' beats together.
    """
    try:
        size = os.stat(wal_path).st_size
    except FileNotFoundError:
        size = 0
    if size > WAL_SOFT_LIMIT_BYTES:
        return "TRUNCATE"
    return "PASSIVE" if due else None


def run_checkpoint(conn: Any, mode: str) -> tuple[int, int, int]:
    busy, frames, copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    return int(busy), int(frames), int(copied)


def _tune_connection(conn: Any) -> None:
    hand_over_checkpoints(conn)  # her checkpoints run at her beat (see checkpoint_mode), never inside a request


def _record_stop(conn: Any, now: float, wall: float) -> None:
    with transaction(conn):  # the stop mark and its event together: a half-recorded stop is no clean stop
        daemon_stopped(conn, now, wall)
        log_event(conn, now, "stop", pid=os.getpid())


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


def _claim_handle(conn: Any, handle: str) -> dict[str, Any] | None:
    """Record `handle` on a file that has none yet (a single-file companion moved into the directory)."""
    companion = get_companion(conn)
    if companion is not None and companion.get("handle") is None:
        with transaction(conn):
            set_companion_handle(conn, handle)
        companion = get_companion(conn)
    return companion


class CompanionRuntime:
    """One served companion: her lock, connection, context and beat state."""

    def __init__(self, handle: str, db_path: Path, settings: Settings, clock: Clock, log: Any, shared: Shared):
        self.handle = handle
        self.db_path = db_path
        self.settings = settings
        self.clock = clock
        self.log = log
        self.shared = shared
        self.lock = DaemonLock(db_path)
        self.ctx: DaemonContext | None = None
        self.persona: Persona | None = None
        self.indexer: VectorIndexer | None = None
        self.event_cursor = 0
        self.beats = 0
        # Where her jobs and checkpoint beats fall in the cycle: companions opened together would otherwise
        # all run them in the same minute (a thousand jobs steps at once every 4th, checkpoints every 8th).
        self._cycle_offset = zlib.crc32(handle.encode()) % (JOBS_EVERY_BEATS * CHECKPOINT_EVERY_BEATS)
        self.clock_steps = 0
        self.beating = False
        self.last_lag_ms = 0.0
        self.schema = 0  # her file's schema version once open
        self._prev_wall = 0.0
        self._beat_future: asyncio.Future[Any] | None = None
        self._seen: tuple[int, int] | None = None  # the last beat's marks (BeatResult.seen)
        self._memory_high = 0
        self._offers_due_at: float | None = None
        self._prev_mono = 0.0
        self._summary = ""

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
        store = await AsyncStore(self.db_path, cache_kib=PAGE_CACHE_KIB, lookaside=False, pool=self.shared.db_pool).open()
        ctx = DaemonContext(settings=self.settings, db_path=self.db_path, clock=self.clock, store=store,
                            log=self.log, started_at=now, last_beat_at=now)
        self.ctx = ctx
        await store.call(_tune_connection)
        companion = await store.call(_claim_handle, self.handle)
        _check_handle(self.db_path, self.handle, companion)
        ctx.companion = companion
        self.settings = ctx.settings = her_settings(self.settings, companion)  # her city, zone and role
        ctx.last_beat_mono = mono
        ctx.services.update(self.shared.services)
        ctx.services["embedder"] = self.shared.embedder
        ctx.services["last_beat_before_start"] = recovered["last_beat_at"]
        ctx.services["heartbeat_stats"] = self.heartbeat_stats
        ctx.services["status_summary"] = lambda: self._summary
        ctx.switches = await store.call(read_switches)
        ctx.controls = ctx.switches.legacy()
        self.event_cursor = await store.call(oplog.start_cursor)
        self.persona = persona_of_companion(companion)
        ctx.services["persona"] = self.persona
        await store.call(resume_after_gap, self.settings, self.persona, recovered["last_beat_at"], now)
        snap = await store.call(inner_snapshot, self.settings, self.persona, now)
        self._summarise(snap["mood"], snap["activity"]["kind"] if snap["activity"] else None)
        js = self.settings.jobs
        for item in await store.call(jobs.recover_interrupted, now, jobs.REASON_RESTART, js.backoff_s):
            self.log.warning("job.interrupted", job_id=item["job_id"], kind=item["kind"], attempt=item["attempt"],
                             since=item["since"], reason=jobs.REASON_RESTART, next=item["status"])
        self.indexer = VectorIndexer(ctx, self.shared.embedder, queue=self.shared.index_queue)
        ctx.services["vector_indexer"] = self.indexer
        self.indexer.start()  # the first drain scans from id 0: rows a crash left pending
        self._prev_wall, self._prev_mono = now, mono

    def heartbeat_stats(self) -> dict[str, Any]:
        return {"beats": self.beats, "clock_steps": self.clock_steps}

    async def beat(self, due_mono: float) -> float:
        """One heartbeat on her lane; returns its lag in ms (how late it started against its due time)."""
        future = self.start_beat(due_mono)
        with contextlib.suppress(Exception):  # logged by _finish, which ran first
            await future
        return self.last_lag_ms

    def start_beat(self, due_mono: float) -> asyncio.Future[Any]:
        """Queue her whole beat on her lane (the host's beat lane runs `prepare_beat`'s work itself)."""
        future, work = self.prepare_beat(due_mono)
        assert self.ctx is not None
        self.ctx.store.enqueue(future, work, False)
        return future

    def prepare_beat(self, due_mono: float) -> tuple[asyncio.Future[Any], Callable[[Any, bool], BeatResult]]:
        """Her next beat as (future, work): `work(conn, on_lane)` runs it; the future is done once `_finish` applied it.

        No task and no coroutine per beat: a thousand companions would spend more on the event loop's
        machinery than on their lives. What the beat reads of her runtime is taken now, on the loop;
        the clock is read when the work starts, so the lag it reports includes any wait in a queue.
        """
        ctx = self.ctx
        assert ctx is not None
        worker = self.shared.worker
        js = self.settings.jobs
        owner = worker.owner if worker is not None and worker.has_room(self.handle) else None
        indexer = self.indexer
        cycle = self.beats + self._cycle_offset
        beat = BeatInput(now=0.0, wall=0.0, lag_ms=0.0, event_cursor=self.event_cursor,
                         indexed_upto=indexer.drain.indexed_upto if indexer else 0,
                         jobs=self.beats == 0 or cycle % JOBS_EVERY_BEATS == 0, claim_owner=owner,
                         lease_s=js.lease_s, backoff_s=tuple(js.backoff_s), db_path=str(self.db_path),
                         api_step=self.shared.api.step if self.shared.api is not None else None,
                         checkpoint=cycle % CHECKPOINT_EVERY_BEATS == CHECKPOINT_EVERY_BEATS - 1,
                         clock_step=None, seen=self._seen, switches=ctx.switches, memory_high=self._memory_high,
                         offers_due_at=self._offers_due_at)
        settings, persona, has_companion = self.settings, self.persona, ctx.companion is not None

        def work(conn: Any, on_lane: bool) -> BeatResult:
            mono, now = self.clock.monotonic(), self.clock.now()
            step = wall_step(self._prev_wall, self._prev_mono, now, mono)
            elapsed = max(0.0, mono - self._prev_mono)
            timed = dataclasses.replace(beat, now=now, wall=time.time(), lag_ms=max(0.0, (mono - due_mono) * 1000),
                                        clock_step=(round(step, 3), round(elapsed, 3)) if step is not None else None)
            result = beat_on(conn, settings, persona, has_companion, timed, on_lane)
            self._prev_wall, self._prev_mono = now, mono  # one beat of hers at a time: no other writer
            return result

        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.beating = True
        self._beat_future = future
        future.add_done_callback(lambda done: self._finish(ctx, done, owner))
        return future, work

    def _finish(self, ctx: DaemonContext, done: asyncio.Future[Any], owner: str | None) -> None:
        self.beating = False
        if done.cancelled():
            return
        exc = done.exception()
        if exc is not None:  # the batch catches its steps' errors: this is the thread or the connection
            self._seen = None
            self.log.error("heartbeat.failed", error=type(exc).__name__, detail=str(exc)[:200])
            return
        result: BeatResult = done.result()
        self._seen, self._memory_high, self._offers_due_at = result.seen, result.memory_high, result.offers_due_at
        if result.clock_step is not None:
            self.clock_steps += 1
            self.log.warning("clock.stepped", step_s=result.clock_step[0], elapsed_s=result.clock_step[1])
        self._apply(ctx, result, owner)
        ctx.last_beat_at = result.now
        ctx.loop_lag_ms = result.lag_ms
        ctx.last_beat_mono = self.clock.monotonic()
        self.last_lag_ms = result.lag_ms
        self.beats += 1

    def _apply(self, ctx: DaemonContext, result: BeatResult, owner: str | None) -> None:
        """Log and act on what the batched beat found, on the event loop (no DB work here)."""
        full = next((exc for _, exc in result.errors if isinstance(exc, StorageFullError)), None)
        if full is not None:
            ctx.store.fault = str(full)
            self.log.warning("db.beat_unrecorded", reason="storage_full")
        elif result.beat_recorded:
            ctx.store.fault = None
        for step, exc in result.errors:
            if not isinstance(exc, StorageFullError):
                self.log.error("component.failed", component=step, error=type(exc).__name__, detail=str(exc)[:200])
        if result.switches is not None and result.switches != ctx.switches:  # legacy() costs 0.03 ms: on change only
            ctx.switches = result.switches
            ctx.controls = result.switches.legacy()
        self._log_writes(result.writes)
        life = result.life
        if life is not None:
            if life["backwards"]:
                self.log.warning("clock.backwards", part="life")
            if life["transitions"]:
                self.log.info("life.transition", activity=life["activity"], transitions=life["transitions"],
                              life_events=life["life_events"])
            self._summarise(life["mood"], life["activity"])
        if result.expired_offers:
            self.log.info("share.expired", count=result.expired_offers)
        due = result.scheduled
        if due is not None:
            self.log.debug("job.scheduled", job_id=due.job_id, kind=due.kind, trigger=due.trigger, backlog=due.backlog)
        for item in result.recovered:
            self.log.warning("job.interrupted", job_id=item["job_id"], kind=item["kind"], attempt=item["attempt"],
                             since=item["since"], reason=jobs.REASON_LEASE, next=item["status"])
        if result.job is not None and owner is not None:
            self.log.info("job.claimed", job_id=result.job.id, kind=result.job.kind, attempt=result.job.attempts)
            self.shared.worker.start_job(self.handle, ctx, result.job)
        if result.api is not None and self.shared.api is not None:
            self.shared.api.apply(self.handle, ctx, result.api)
        if result.vectors_waiting and self.indexer is not None:
            self.indexer.wake()
        if result.checkpoint is not None:
            self._log_checkpoint(result.checkpoint)
        elif result.checkpoint_mode is not None:  # the beat lane left it to her lane (its fsync must not hold the beat lane)
            with contextlib.suppress(ValueError):  # closing: her close checkpoints anyway
                ctx.store.submit(run_checkpoint, result.checkpoint_mode).add_done_callback(self._checkpoint_done)

    def _checkpoint_done(self, done: asyncio.Future[Any]) -> None:
        if done.cancelled():
            return
        exc = done.exception()
        if exc is not None:
            self.log.error("component.failed", component="checkpoint", error=type(exc).__name__, detail=str(exc)[:200])
        else:
            self._log_checkpoint(done.result())

    def _log_checkpoint(self, outcome: tuple[int, int, int]) -> None:
        busy, frames, copied = outcome
        if frames:
            self.log.debug("db.checkpoint", wal_frames=frames, copied=copied, busy=busy)

    def _log_writes(self, rows: list[dict[str, Any]]) -> None:
        """As single-file mode: each write another process recorded, once, by its one name (API writes skipped)."""
        for row in rows:
            self.event_cursor = row["id"]
            if row["name"] is None or row["detail"].get("actor") == "api":
                continue
            self.log.info(row["name"], event_id=row["id"], **row["detail"])
            if row["name"] == CHANGED_EVENT and row["detail"].get("alias"):
                self.log.info(DEPRECATED_EVENT, event_id=row["id"], key=row["detail"]["alias"],
                              now=row["detail"].get("key"), actor=row["detail"].get("actor"))

    def _summarise(self, mood: dict[str, Any], activity: str | None) -> None:
        self._summary = f"mood {mood['label']} energy {mood['e']:.2f} doing {activity or '-'}"

    async def close(self) -> None:
        """Stop her indexer, record a clean stop, close the connection (its last checkpoint), release the lock."""
        ctx, self.ctx = self.ctx, None
        try:
            beat = self._beat_future
            if beat is not None and not beat.done():  # dispatched to the lane: let it land before she closes
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.shield(beat), STOP_STEP_TIMEOUT_S)
            if self.indexer is not None:
                await self.indexer.stop()
                self.indexer = None
            if ctx is not None:
                try:
                    async with asyncio.timeout(STOP_STEP_TIMEOUT_S):
                        await ctx.store.call(_record_stop, self.clock.now(), time.time())
                except Exception as exc:  # the next start's gap then says clean_stop: false, the truth on file
                    self.log.warning("daemon.stop_unrecorded", error=type(exc).__name__)
                await ctx.store.close()
        finally:
            self.lock.release()
