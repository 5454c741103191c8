"""The main loop: lock, migrate, recover, start the parts, beat, and drain on SIGTERM.

Start order: take the exclusive lock, migrate, make sure she exists (a demo companion on first
start), write one `gap` event for the downtime since the last beat, start the parts listed in
daemon/components.py, then tell systemd READY=1. Every heartbeat is her one list of steps
(daemon/beat.py: switches, recorded writes, life, offers, jobs, vectors, tokens, the beat record),
run as a directory host runs it for each of its companions (daemon/companion_beat.py: single-file
mode is a host of one), then the checkpoint and the watchdog ping. SIGTERM drains and exits 0;
SIGHUP reloads config.toml (what can change live is applied, the rest is named as needing a restart).

The heartbeat runs on the monotonic clock, not apscheduler: apscheduler's interval trigger keeps its
next run time in wall-clock datetimes, so a wall clock stepped back 120 s postponed the next beat by
120 s and a step back of a day stopped it for a day, and with it the systemd watchdog pings. A plain
loop that sleeps until a monotonic deadline cannot be moved by the wall clock; a step is only
something each beat notices (wall and monotonic moved by different amounts) and logs as
`clock.stepped`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from daemon.checkpoint import WalCheckpointer, hand_over_checkpoints
from daemon.clock import Clock
from daemon.companion_beat import CompanionBeat, record_stop
from daemon.component import Component, DaemonContext
from daemon.components import COMPONENTS
from daemon.config import reload_settings
from daemon.db import AsyncStore
from daemon.logs import get_logger
from daemon.scheduler import Calendar
from daemon.sdnotify import Notifier, refuse_if_watchdog_too_tight
from engine.companion import create_companion
from engine.errors import InputError
from engine.home import default_home, her_settings
from engine.restore import interrupted_restore
from engine.settings import Settings
from engine.store import connect, driver_name, migrate, oplog, transaction
from engine.store.connect import quick_check, store_fault
from engine.store.core import daemon_started, daemon_state, get_companion, log_event, read_switches
from engine.store.lock import DaemonLock
from engine.store.migrate import check_not_newer, db_schema_version

DRAIN_TIMEOUT_S = 8.0
STOP_STEP_TIMEOUT_S = 3.0
SINGLE = None  # her handle in single-file mode (daemon/api/tokens.SINGLE): none


def prepare_database(db_path: Path, settings: Settings, now: float, log: Any,
                     served_by: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check the file, migrate, create the demo companion if none, and record the gap since the last beat.

    Returns what recovery learnt: the previous last beat (her time) and the companion row. A file
    that is not a healthy anima database is refused here (DamagedStoreError, one line), before
    she writes anything into it; a full disk is StorageFullError, not a traceback.

    `served_by` goes into her `start` event with her beat: how `anima status` and `anima doctor` (which
    read only her file) know a directory host serves her, on which socket, at which beat (issue 25).
    """
    try:
        return _prepare(db_path, settings, now, log, served_by or {"mode": "file"})
    except Exception as exc:
        fault = store_fault(exc, db_path)
        if fault is None or fault is exc:
            raise
        raise fault from exc


def _prepare(db_path: Path, settings: Settings, now: float, log: Any, served_by: dict[str, Any]) -> dict[str, Any]:
    leftover = interrupted_restore(db_path)
    if leftover is not None:
        raise InputError(f"database {db_path} does not exist, but an interrupted anima restore left {leftover}: "
                         "run the restore again (or delete that file to start a new companion here)")
    if db_path.exists():
        # Read-only first: even switching a file to WAL writes its header, and a damaged file must be
        # left exactly as it was found (for a restore, or for forensics).
        reader = connect(db_path, readonly=True)
        try:
            quick_check(reader, db_path)
        finally:
            reader.close()
    conn = connect(db_path)
    try:
        check_not_newer(conn)
        applied = migrate(conn, now)
        if applied:
            log.info("db.migrated", versions=applied, schema=db_schema_version(conn))
        companion = get_companion(conn)
        if companion is None:
            demo = settings.companion
            companion = create_companion(
                conn,
                name=demo.demo_name,
                birth_local=demo.demo_birth,
                tz=demo.demo_tz,
                place=demo.demo_place,
                sect=demo.bazi_sect,
                now=now,
                home=default_home(settings),
            )
            log.info("companion.created", demo=True, birth_tz=demo.demo_tz)
        # One transaction: the gap, the new run's row (stopped_at = NULL) and its start event land
        # together or not at all, so a start that failed (disk full) leaves the previous run's
        # record as it was, and a run that is later killed can never inherit a clean stop.
        with transaction(conn):
            previous = daemon_state(conn)
            last_beat = previous["last_beat_at"] if previous else None
            clean_stop = bool(previous and previous["stopped_at"] is not None)
            backwards_s = max(0.0, last_beat - now) if last_beat is not None else 0.0
            if last_beat is not None:
                gap_s = max(0.0, now - last_beat)
                if backwards_s > 0:  # the wall clock was set back while we were down: say so, not "0 s gap"
                    log_event(conn, now, "clock_backwards", seconds=round(backwards_s, 3), at="start")
                log_event(conn, now, "gap", since=last_beat, until=now, seconds=round(gap_s, 3),
                          clean_stop=clean_stop, backwards_s=round(backwards_s, 3))
            daemon_started(conn, os.getpid(), now, time.time())
            log_event(conn, now, "start", pid=os.getpid(), schema=db_schema_version(conn), driver=driver_name(),
                      beat_s=settings.heartbeat.interval_s, **served_by)
        if last_beat is not None:  # logged once it is on file
            if backwards_s > 0:
                log.warning("clock.backwards", seconds=round(backwards_s, 3), at="start")
            # A crash (no clean stop) is something an operator should see at -p warning.
            (log.info if clean_stop else log.warning)("daemon.gap", seconds=round(max(0.0, now - last_beat), 3),
                                                      clean_stop=clean_stop)
        return {"last_beat_at": last_beat, "companion": companion, "schema": db_schema_version(conn)}
    finally:
        conn.close()


def load_components(names: list[str], ctx: DaemonContext) -> list[Component]:
    parts = []
    for spec in names:
        module_name, _, factory = spec.partition(":")
        module = importlib.import_module(module_name)
        parts.append(getattr(module, factory or "build")(ctx))
    return parts


class Daemon:
    def __init__(self, settings: Settings, db_path: Path, clock: Clock, config_file: Path | None,
                 components: list[str] | None = None):
        self.settings = settings
        self.db_path = db_path
        self.clock = clock
        self.config_file = config_file
        self.component_names = COMPONENTS if components is None else components
        self.log = get_logger()
        self.notifier = Notifier()
        self.lock = DaemonLock(db_path)
        self.stopping = asyncio.Event()
        self.parts: list[Component] = []
        self.beat_task: asyncio.Task[None] | None = None
        self.ctx: DaemonContext | None = None
        self.heart: CompanionBeat | None = None  # her beats (daemon/companion_beat.py), once started
        self._beat_lock = asyncio.Lock()
        self._rescheduled = asyncio.Event()
        self.checkpointer: WalCheckpointer | None = None
        self.calendar: Calendar | None = None  # cron firings in her zone (daemon/scheduler.py); beats are not on it
        self._last_beat_mono = 0.0  # when the previous beat ran (monotonic), for loop lag

    async def run(self) -> int:
        refuse_if_watchdog_too_tight(self.notifier, self.settings.heartbeat.interval_s)  # a permanent mismatch: exit 2 before touching anything
        self.lock.acquire()  # before migrating: a second daemon must not touch the file at all
        try:
            return await self._run_locked()
        finally:
            self.lock.release()
            self.notifier.close()

    async def _run_locked(self) -> int:
        now, mono = self.clock.now(), self.clock.monotonic()
        recovered = prepare_database(self.db_path, self.settings, now, self.log)
        store = await AsyncStore(self.db_path).open()
        await store.call(hand_over_checkpoints)
        self.checkpointer = WalCheckpointer(self.db_path)
        self.checkpointer.start(self.log)
        # Her settings: the config's, with her city, zone and role from her file (engine/home.py).
        ctx = DaemonContext(settings=her_settings(self.settings, recovered["companion"]), db_path=self.db_path,
                            clock=self.clock, store=store, log=self.log, companion=recovered["companion"],
                            started_at=now, last_beat_at=now, last_beat_before_start=recovered["last_beat_at"])
        ctx.last_beat_mono = mono
        ctx.switches = await store.call(read_switches)
        ctx.controls = ctx.switches.legacy()
        # The parts that run hand in the job worker and the API (daemon/worker.py, daemon/api/server.py).
        self.heart = CompanionBeat(ctx, self.log, handle=SINGLE, worker=lambda: ctx.worker, api=lambda: ctx.api)
        self.heart.event_cursor = await store.call(oplog.start_cursor)  # writes since the last clean stop, not history
        self.ctx = ctx
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self.stopping.set)
        loop.add_signal_handler(signal.SIGINT, self.stopping.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.reload()))
        try:
            self.parts = load_components(self.component_names, ctx)
            for part in self.parts:
                await part.start(ctx)
                self.log.info("component.started", component=part.name)
            self.calendar = Calendar(ctx.settings, self.clock, lambda: [("", store, ctx.settings)], self.log)
            self.calendar.start()
            self.heart.restart_from(now, mono)
            self._last_beat_mono = self.clock.monotonic()
            self.beat_task = asyncio.create_task(self._beat_loop(), name="heartbeat")
            self.notifier.notify("READY=1", f"STATUS={self.status_line()}")
            self.log.info("daemon.ready", pid=os.getpid(), db=str(self.db_path), schema=recovered["schema"],
                          driver=driver_name(), heartbeat_s=self.settings.heartbeat.interval_s,
                          parts=[p.name for p in self.parts])
            await self.stopping.wait()
        finally:
            await self.shutdown()
        return 0

    async def _beat_loop(self) -> None:
        """Beat every interval_s of monotonic time until stopped; late beats coalesce into one.

        The deadline is a monotonic reading and the wait is the event loop's own timer (monotonic
        too), so no wall-clock step can postpone or stop a beat. SIGHUP changing interval_s wakes
        the wait so the new interval counts from the last beat.
        """
        next_at = self._last_beat_mono + self.settings.heartbeat.interval_s
        while not self.stopping.is_set():
            if self._rescheduled.is_set():  # SIGHUP changed interval_s: count it from the last beat
                self._rescheduled.clear()
                next_at = self._last_beat_mono + self.settings.heartbeat.interval_s
            wait = next_at - self.clock.monotonic()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await _first_of(self.stopping.wait(), self._rescheduled.wait())
                continue  # re-check stopping, a reschedule, and that the deadline has really come
            try:
                await self.heartbeat()
            except Exception as exc:  # a failed beat (e.g. the DB write) must not end the loop
                self.log.error("heartbeat.failed", error=type(exc).__name__, detail=str(exc)[:200])
                # The watchdog asks "is the loop alive", and it is: a restart cannot fix a full disk or
                # a broken file, while a live daemon can answer /v1/health with why (its last beat ages).
                self.notifier.notify("WATCHDOG=1", f"STATUS=beat failed: {type(exc).__name__}")
            interval = self.settings.heartbeat.interval_s
            next_at += interval
            mono = self.clock.monotonic()
            if next_at <= mono:  # we fell behind (a long beat, a suspended VM): one beat now, not a burst
                next_at = mono + interval

    @property
    def beats(self) -> int:
        return self.heart.beats if self.heart is not None else 0

    @property
    def clock_steps(self) -> int:
        return self.heart.clock_steps if self.heart is not None else 0

    async def heartbeat(self) -> None:
        """One beat: her list of steps (daemon/beat.py) on her connection, then the checkpoint and the watchdog."""
        assert self.ctx is not None and self.heart is not None
        if self.stopping.is_set():
            return
        async with self._beat_lock:
            mono = self.clock.monotonic()
            due = self._last_beat_mono + self.settings.heartbeat.interval_s
            self._last_beat_mono = mono
            failure = await self.heart.beat(due)
            lag_ms = self.heart.last_lag_ms
            if lag_ms > self.settings.heartbeat.lag_warn_ms:
                self.log.warning("heartbeat.lag", lag_ms=round(lag_ms, 1))
            if self.calendar is not None:
                self.calendar.nudge()  # what her clock says is due now (a stepped wall clock moves it)
            await self._checkpoint()
            if failure is not None:
                # The watchdog asks "is the loop alive", and it is: a restart cannot fix a full disk or a broken
                # file, while a live daemon can answer /v1/health with why (its last beat ages).
                self.notifier.notify("WATCHDOG=1", f"STATUS=beat failed: {type(failure).__name__}")
                return
            self.ctx.last_beat_mono = self.clock.monotonic()
            self.notifier.notify("WATCHDOG=1", f"STATUS={self.status_line()}")
            self.log.debug("heartbeat.done", lag_ms=round(lag_ms, 1))

    async def _checkpoint(self) -> None:
        if self.checkpointer is None:
            return
        try:
            busy, frames, copied = await self.checkpointer.run()
        except Exception as exc:  # the daemon's own COMMITs then grow the WAL; the next beat tries again
            self.log.warning("db.checkpoint_failed", error=type(exc).__name__, detail=str(exc)[:200])
            return
        if frames:
            self.log.debug("db.checkpoint", wal_frames=frames, copied=copied, busy=busy)

    def status_line(self) -> str:
        ctx = self.ctx
        if ctx is None:
            return "starting"
        name = ctx.companion["name"] if ctx.companion else "?"
        extra = f" {ctx.status_summary}" if ctx.status_summary else ""
        return f"{name}: beat ok, lag {ctx.loop_lag_ms:.0f} ms{extra}"

    async def reload(self) -> None:
        """SIGHUP: re-read config.toml; apply what can change live, name what needs a restart (daemon/config.py)."""
        merged = reload_settings(self.settings, self.config_file, self.log)
        if merged is None:
            return
        interval_changed = merged.heartbeat.interval_s != self.settings.heartbeat.interval_s
        self.settings = merged
        hers = her_settings(merged, self.ctx.companion if self.ctx else None)
        if self.ctx:
            self.ctx.settings = hers
        if interval_changed:
            self._rescheduled.set()
        if self.calendar is not None:
            self.calendar.reschedule(hers)

    async def shutdown(self) -> None:
        self.notifier.notify("STOPPING=1", "STATUS=stopping")
        self.log.info("daemon.stopping")
        self.stopping.set()
        if self.beat_task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self.beat_task), DRAIN_TIMEOUT_S)
        ctx = self.ctx
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                async with self._beat_lock:  # let a running beat finish
                    for part in reversed(self.parts):
                        try:
                            await part.stop(ctx)  # type: ignore[arg-type]
                        except Exception as exc:
                            self.log.error("component.stop_failed", component=part.name, error=type(exc).__name__)
        except TimeoutError:
            self.log.warning("daemon.drain_timeout", seconds=DRAIN_TIMEOUT_S)
        if self.calendar is not None:
            await self.calendar.stop()
        # Every step below is bounded and may fail (a full disk): a stop always completes.
        if self.checkpointer is not None:
            try:
                async with asyncio.timeout(STOP_STEP_TIMEOUT_S):
                    await self.checkpointer.close()
            except Exception as exc:
                self.log.warning("db.checkpointer_close_failed", error=type(exc).__name__)
        if ctx is not None:
            await record_stop(ctx, self.log)
        self.log.info("daemon.stopped")


async def _first_of(*waits: Any) -> None:
    """Return when the first of `waits` (coroutines) is done; cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
