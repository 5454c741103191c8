"""The calendar: what happens at a time of day in her zone, fired by apscheduler, each firing one leased job row.

Two clocks, two schedulers. The heartbeat is NOT scheduled here: it runs on the monotonic clock
(daemon/app.py's beat loop, daemon/host.py's beat timer and daemon/beat_schedule.py), so a wall-clock
step (NTP, an operator, a VM resume) can neither stall it nor make it burst. Everything that happens at
a time of day or on a calendar runs here, on apscheduler 3's AsyncIOScheduler with cron triggers in
her zone ([life] tz): consolidation at [consolidation] cron_hour, and the [maintenance] crontab lines
(a nightly verified snapshot with rotation, a weekly integrity_check, trace retention).

A firing only queues a job row in her file (engine/jobs/schedule.enqueue_calendar: unique per kind, so
a firing that finds one still open adds nothing); the worker claims and runs it under a lease, and a
restart recovers it as before: the job table stays the durable truth, the scheduler holds no state
worth keeping. `coalesce` and `misfire_grace_time` ([maintenance] misfire_grace_s) give the downtime
semantics: firings missed while the daemon was down or the wall clock jumped become one, run if it is
still within the grace, skipped otherwise (the next one comes).

apscheduler times its wake-ups against the wall clock (`datetime.now`) on the loop's monotonic timer.
Its time source here is the daemon's Clock (`use_clock`), so tests step her wall clock and the
scheduler sees it; and every heartbeat nudges it (`nudge`): after a forward step what became due
fires at the next beat, not when the old timer runs out; after a backward step it re-arms and fires
nothing twice (a run time it passed is behind its next one).

One scheduler per process: a host of 1,000 companions has one job per kind that fans out over her
open companions (on one thread, one after another: bounded CPU and threads, a few times a night),
not thousands of apscheduler jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import apscheduler.executors.base
import apscheduler.schedulers.base
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    EVENT_JOB_SUBMITTED,
    JobEvent,
)
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger

from daemon.clock import Clock, SystemClock
from daemon.db import AsyncStore
from engine.consolidate.run import JOB_KIND as CONSOLIDATE
from engine.jobs import maintenance
from engine.jobs.schedule import enqueue_calendar
from engine.settings import Settings

Targets = Callable[[], list[tuple[str, AsyncStore]]]  # (handle, her store) of every companion open now

STOP_TIMEOUT_S = 3.0
_time_source: Clock = SystemClock()


class _ClockDatetime(datetime):
    """apscheduler's `datetime.now`, read from the daemon's Clock (apscheduler 3 has no time-source option)."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        return datetime.fromtimestamp(_time_source.now(), tz)


def use_clock(clock: Clock) -> None:
    """Make apscheduler read `clock` (one scheduler per process, so one time source)."""
    global _time_source
    _time_source = clock
    setattr(apscheduler.schedulers.base, "datetime", _ClockDatetime)  # noqa: B010 (module attribute, not typed)
    setattr(apscheduler.executors.base, "datetime", _ClockDatetime)  # noqa: B010


def calendar_triggers(settings: Settings) -> dict[str, CronTrigger]:
    """Job kind -> its cron trigger in her zone; a [maintenance] line set to "" is left out."""
    zone = ZoneInfo(settings.life.tz)
    m = settings.maintenance
    triggers = {CONSOLIDATE: CronTrigger(hour=settings.consolidation.cron_hour, minute=0, timezone=zone)}
    for kind, line in ((maintenance.SNAPSHOT, m.snapshot_cron), (maintenance.INTEGRITY, m.integrity_cron),
                       (maintenance.RETENTION, m.retention_cron), (maintenance.REPLICA_VERIFY, m.replica_verify_cron)):
        if line:
            triggers[kind] = CronTrigger.from_crontab(line, timezone=zone)
    return triggers


class Calendar:
    """The process's one apscheduler: a cron job per kind, each firing queues that kind in every open companion."""

    def __init__(self, settings: Settings, clock: Clock, targets: Targets, log: Any):
        self.settings = settings
        self.clock = clock
        self.targets = targets
        self.log = log
        self.fired: Counter[str] = Counter()  # firings run, by kind (tests and health read it)
        self.missed: Counter[str] = Counter()  # firings skipped: past the misfire grace
        self._pending = 0  # firings submitted and not yet run or skipped
        self._settled = asyncio.Event()
        self._settled.set()
        # Firings due together (after a sleep or a clock step) queue in their calendar order:
        # the lock is FIFO and apscheduler submits due jobs by run time.
        self._one_at_a_time = asyncio.Lock()
        self._scheduler: AsyncIOScheduler | None = None

    def start(self) -> None:
        use_clock(self.clock)
        # apscheduler's own lines are prose ("Running job ..."); ours are events (calendar.fired, calendar.missed).
        logging.getLogger("apscheduler").setLevel(logging.ERROR)
        scheduler = AsyncIOScheduler(timezone=ZoneInfo(self.settings.life.tz), job_defaults={
            "coalesce": True, "max_instances": 1, "misfire_grace_time": int(self.settings.maintenance.misfire_grace_s)})
        scheduler.add_listener(self._on_event, EVENT_JOB_SUBMITTED | EVENT_JOB_EXECUTED | EVENT_JOB_ERROR
                               | EVENT_JOB_MISSED)
        scheduler.start()
        self._scheduler = scheduler
        self._add_jobs()

    def _add_jobs(self) -> None:
        assert self._scheduler is not None
        for kind, trigger in calendar_triggers(self.settings).items():
            self._scheduler.add_job(self._fire, trigger, args=[kind], id=kind, name=kind, replace_existing=True)

    def reschedule(self, settings: Settings) -> None:
        """SIGHUP: new crontab lines, zone or cron hour take effect; a firing already queued stays queued."""
        self.settings = settings
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.remove_all_jobs()
            self._add_jobs()

    def nudge(self) -> None:
        """From the heartbeat: fire what is due by her clock now, and re-arm the timer (a wall-clock step moves it)."""
        if self._scheduler is not None and self._scheduler.running:
            wakeup = AsyncIOScheduler.wakeup.__wrapped__  # type: ignore[attr-defined]  # now, not call_soon
            wakeup(self._scheduler)

    def next_fire(self, kind: str) -> datetime | None:
        job = self._scheduler.get_job(kind) if self._scheduler is not None else None
        return job.next_run_time if job is not None else None

    async def settled(self) -> None:
        """Until every firing submitted so far has run (or was skipped): for tests and a clean stop."""
        await self._settled.wait()

    def _on_event(self, event: JobEvent) -> None:
        if event.code == EVENT_JOB_SUBMITTED:
            self._pending += 1
            self._settled.clear()
            return
        if event.code == EVENT_JOB_MISSED:
            self.missed[event.job_id] += 1
            self.log.warning("calendar.missed", kind=event.job_id, grace_s=self.settings.maintenance.misfire_grace_s)
        self._pending = max(0, self._pending - 1)
        if self._pending == 0:
            self._settled.set()

    async def _fire(self, kind: str) -> None:
        """Queue `kind` in every open companion: on ONE thread, one after another, like the beat lane.

        A DB call each through her own connection's thread would start a thread per companion (a
        thousand at once on a host); `run_if_free` uses her connection from this one thread when it is
        idle, and only a companion whose connection is busy gets hers queued on her own thread.
        """
        async with self._one_at_a_time:
            await self._fire_now(kind)

    async def _fire_now(self, kind: str) -> None:
        now = self.clock.now()
        targets = self.targets()

        def on_one_thread() -> list[tuple[bool, int | None, BaseException | None]]:
            out: list[tuple[bool, int | None, BaseException | None]] = []
            for _, store in targets:
                try:
                    ran, job_id = store.run_if_free(enqueue_calendar, kind, now, self.settings)
                    out.append((ran, job_id, None))
                except Exception as exc:  # one companion's full disk must not skip the others
                    out.append((True, None, exc))
            return out

        queued = failed = 0
        for (handle, store), (ran, job_id, error) in zip(targets, await asyncio.to_thread(on_one_thread),
                                                         strict=True):
            if not ran:  # her connection was busy (or she closed meanwhile): her own thread queues it
                try:
                    job_id = await store.call(enqueue_calendar, kind, now, self.settings)
                except Exception as exc:
                    error = exc
            if error is not None:
                failed += 1
                self.log.warning("calendar.enqueue_failed", kind=kind, handle=handle, error=type(error).__name__)
            elif job_id is not None:
                queued += 1
        self.fired[kind] += 1
        self.log.info("calendar.fired", kind=kind, queued=queued, failed=failed)

    async def stop(self) -> None:
        """No more firings; one under way gets a moment to queue its rows (what it misses fires next time)."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None and scheduler.running:
            scheduler.shutdown(wait=False)
            await asyncio.sleep(0)  # AsyncIOScheduler shuts down from the loop (call_soon_threadsafe)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await self._settled.wait()
