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

One scheduler per process: a host of 1,000 companions has one job per kind and zone that fans out over
the open companions who live in that zone (on one thread, one after another: bounded CPU and threads, a
few times a night), not thousands of apscheduler jobs. Each companion lives in her own zone (her file's
home, engine/home.py, issue 24 item 7): consolidation at 03:00 is 03:00 in Shanghai for one and 03:00 in
New York for another. The zone of [life] tz always has its jobs; another zone gets its own the first time
a companion of that zone is seen (`watch_zone`, or the next firing), and keeps them while the process runs.
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

# (handle, her store, her settings) of every companion open now; her settings say her zone ([life] tz).
Targets = Callable[[], list[tuple[str, AsyncStore, Settings]]]

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


def calendar_triggers(settings: Settings, tz: str | None = None) -> dict[str, CronTrigger]:
    """Job kind -> its cron trigger in zone `tz` (default [life] tz); a [maintenance] line set to "" is left out."""
    zone = ZoneInfo(tz or settings.life.tz)
    m = settings.maintenance
    triggers = {CONSOLIDATE: CronTrigger(hour=settings.consolidation.cron_hour, minute=0, timezone=zone)}
    for kind, line in ((maintenance.SNAPSHOT, m.snapshot_cron), (maintenance.INTEGRITY, m.integrity_cron),
                       (maintenance.RETENTION, m.retention_cron), (maintenance.REPLICA_VERIFY, m.replica_verify_cron)):
        if line:
            triggers[kind] = CronTrigger.from_crontab(line, timezone=zone)
    return triggers


class Calendar:
    """The process's one apscheduler: a cron job per kind and zone, each firing queues that kind in every open
    companion of that zone."""

    def __init__(self, settings: Settings, clock: Clock, targets: Targets, log: Any):
        self.settings = settings
        self.clock = clock
        self.targets = targets
        self.log = log
        self.fired: Counter[str] = Counter()  # firings run, by kind (tests and health read it)
        self.missed: Counter[str] = Counter()  # firings skipped: past the misfire grace
        self.fired_in: Counter[tuple[str, str]] = Counter()  # firings run, by (kind, zone)
        self._pending = 0  # firings submitted and not yet run or skipped
        self._settled = asyncio.Event()
        self._settled.set()
        # Firings due together (after a sleep or a clock step) queue in their calendar order:
        # the lock is FIFO and apscheduler submits due jobs by run time.
        self._one_at_a_time = asyncio.Lock()
        self._scheduler: AsyncIOScheduler | None = None
        self.zones: set[str] = {settings.life.tz}  # the zones that have their jobs
        self._job_kind: dict[str, str] = {}  # apscheduler job id -> its kind

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
        self.zones |= {hers.life.tz for _, _, hers in self.targets()}  # the zones of the companions open now
        self._add_jobs()

    def _job_id(self, kind: str, tz: str) -> str:
        # [life] tz's job keeps the kind's own name (what logs and tests have always read); others are kind@zone.
        return kind if tz == self.settings.life.tz else f"{kind}@{tz}"

    def _add_jobs(self) -> None:
        for tz in sorted(self.zones):
            self._add_zone_jobs(tz)

    def _add_zone_jobs(self, tz: str) -> None:
        assert self._scheduler is not None
        for kind, trigger in calendar_triggers(self.settings, tz).items():
            job_id = self._job_id(kind, tz)
            self._job_kind[job_id] = kind
            self._scheduler.add_job(self._fire, trigger, args=[kind, tz], id=job_id, name=job_id,
                                    replace_existing=True)

    def watch_zone(self, tz: str) -> None:
        """Give zone `tz` its jobs if it has none yet (a companion who lives there was opened)."""
        if tz in self.zones:
            return
        self.zones.add(tz)
        if self._scheduler is not None and self._scheduler.running:
            self._add_zone_jobs(tz)

    def reschedule(self, settings: Settings) -> None:
        """SIGHUP: new crontab lines, zone or cron hour take effect; a firing already queued stays queued."""
        self.settings = settings
        self.zones.add(settings.life.tz)
        if self._scheduler is not None and self._scheduler.running:
            self._scheduler.remove_all_jobs()
            self._job_kind.clear()
            self._add_jobs()

    def nudge(self) -> None:
        """From the heartbeat: fire what is due by her clock now, and re-arm the timer (a wall-clock step moves it)."""
        if self._scheduler is not None and self._scheduler.running:
            wakeup = AsyncIOScheduler.wakeup.__wrapped__  # type: ignore[attr-defined]  # now, not call_soon
            wakeup(self._scheduler)

    def next_fire(self, kind: str, tz: str | None = None) -> datetime | None:
        """When `kind` fires next in zone `tz` (default [life] tz); None when that zone has no such job."""
        job_id = self._job_id(kind, tz or self.settings.life.tz)
        job = self._scheduler.get_job(job_id) if self._scheduler is not None else None
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
            kind = self._job_kind.get(event.job_id, event.job_id)
            self.missed[kind] += 1
            self.log.warning("calendar.missed", kind=kind, job=event.job_id,
                             grace_s=self.settings.maintenance.misfire_grace_s)
        self._pending = max(0, self._pending - 1)
        if self._pending == 0:
            self._settled.set()

    async def _fire(self, kind: str, tz: str | None = None) -> None:
        """Queue `kind` in every open companion of zone `tz`: on ONE thread, one after another, like the beat lane.

        A DB call each through her own connection's thread would start a thread per companion (a
        thousand at once on a host); `run_if_free` uses her connection from this one thread when it is
        idle, and only a companion whose connection is busy gets hers queued on her own thread.
        """
        async with self._one_at_a_time:
            await self._fire_now(kind, tz or self.settings.life.tz)

    async def _fire_now(self, kind: str, tz: str) -> None:
        now = self.clock.now()
        everyone = self.targets()
        for _, _, hers in everyone:  # a zone not seen before gets its jobs (its first firing comes at its hour)
            self.watch_zone(hers.life.tz)
        targets = [(handle, store, hers) for handle, store, hers in everyone if hers.life.tz == tz]

        def on_one_thread() -> list[tuple[bool, int | None, BaseException | None]]:
            out: list[tuple[bool, int | None, BaseException | None]] = []
            for _, store, hers in targets:
                try:
                    ran, job_id = store.run_if_free(enqueue_calendar, kind, now, hers)
                    out.append((ran, job_id, None))
                except Exception as exc:  # one companion's full disk must not skip the others
                    out.append((True, None, exc))
            return out

        queued = failed = 0
        for (handle, store, hers), (ran, job_id, error) in zip(targets, await asyncio.to_thread(on_one_thread),
                                                               strict=True):
            if not ran:  # her connection was busy (or she closed meanwhile): her own thread queues it
                try:
                    job_id = await store.call(enqueue_calendar, kind, now, hers)
                except Exception as exc:
                    error = exc
            if error is not None:
                failed += 1
                self.log.warning("calendar.enqueue_failed", kind=kind, handle=handle, error=type(error).__name__)
            elif job_id is not None:
                queued += 1
        self.fired[kind] += 1
        self.fired_in[(kind, tz)] += 1
        self.log.info("calendar.fired", kind=kind, tz=tz, queued=queued, failed=failed)

    async def stop(self) -> None:
        """No more firings; one under way gets a moment to queue its rows (what it misses fires next time)."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None and scheduler.running:
            scheduler.shutdown(wait=False)
            await asyncio.sleep(0)  # AsyncIOScheduler shuts down from the loop (call_soon_threadsafe)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STOP_TIMEOUT_S):
                await self._settled.wait()
