"""The main loop: lock, migrate, recover, start the parts, beat, and drain on SIGTERM.

Start order: take the exclusive lock, migrate, make sure she exists (a demo companion on first
start), write one `gap` event for the downtime since the last beat, start the parts listed in
daemon/components.py, then tell systemd READY=1. Every heartbeat records liveness and loop lag,
re-reads life_control, steps each part and pets the watchdog. SIGTERM drains and exits 0;
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
from daemon.clock import Clock, wall_step
from daemon.component import Component, DaemonContext
from daemon.components import COMPONENTS
from daemon.config import live_reload, load_settings
from daemon.db import AsyncStore
from daemon.logs import configure_logging, get_logger
from daemon.scheduler import Calendar
from daemon.sdnotify import Notifier, refuse_if_watchdog_too_tight
from engine.companion import create_companion
from engine.control import CHANGED_EVENT, DEPRECATED_EVENT
from engine.errors import AnimaError, InputError, StorageFullError
from engine.home import default_home, her_settings
from engine.inner import JUMP_IS_GAP_S, resume_after_jump
from engine.restore import interrupted_restore
from engine.settings import Settings
from engine.store import connect, driver_name, migrate, oplog, transaction
from engine.store.connect import quick_check, store_fault
from engine.store.core import (
    daemon_beat,
    daemon_started,
    daemon_state,
    daemon_stopped,
    get_companion,
    log_event,
    read_switches,
)
from engine.store.lock import DaemonLock
from engine.store.migrate import check_not_newer, db_schema_version

DRAIN_TIMEOUT_S = 8.0
STOP_STEP_TIMEOUT_S = 3.0


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
        self._beat_lock = asyncio.Lock()
        self._rescheduled = asyncio.Event()
        self.checkpointer: WalCheckpointer | None = None
        self.calendar: Calendar | None = None  # cron firings in her zone (daemon/scheduler.py); beats are not on it
        self._last_beat_mono = 0.0  # when the previous beat ran (monotonic), for loop lag
        self._prev_wall = 0.0  # the wall and monotonic readings of the previous beat, read together,
        self._prev_mono = 0.0  # so the next beat can tell a wall-clock step from time passing
        self.beats = 0
        self.clock_steps = 0
        self._event_cursor = 0

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
                            started_at=now, last_beat_at=now)
        ctx.last_beat_mono = mono
        ctx.services["last_beat_before_start"] = recovered["last_beat_at"]
        ctx.services["heartbeat_stats"] = self.heartbeat_stats
        ctx.switches = await store.call(read_switches)
        ctx.controls = ctx.switches.legacy()
        self._event_cursor = await store.call(oplog.start_cursor)  # writes since the last clean stop, not history
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
            self._prev_wall, self._prev_mono = now, mono
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

    def heartbeat_stats(self) -> dict[str, Any]:
        """For /v1/health and `anima doctor`: beats so far and wall-clock steps seen (monotonic-based)."""
        return {"beats": self.beats, "clock_steps": self.clock_steps}

    async def heartbeat(self) -> None:
        """One beat: liveness, loop lag, clock steps, switches, each part's step, watchdog."""
        assert self.ctx is not None
        if self.stopping.is_set():
            return
        async with self._beat_lock:
            ctx = self.ctx
            mono = self.clock.monotonic()
            now = self.clock.now()
            lag_ms = max(0.0, (mono - self._last_beat_mono - self.settings.heartbeat.interval_s) * 1000)
            self._last_beat_mono = mono
            elapsed = max(0.0, mono - self._prev_mono)
            step = wall_step(self._prev_wall, self._prev_mono, now, mono)
            if step is not None:
                # Her time follows the wall clock (it is what is stored and shown), but this beat's
                # step covers only the time that really passed: a day's jump is not a day lived.
                self.clock_steps += 1
                self.log.warning("clock.stepped", step_s=round(step, 3), elapsed_s=round(elapsed, 3))
                await ctx.store.call(log_event, now, "clock_stepped", step_s=round(step, 3),
                                     elapsed_s=round(elapsed, 3))
                dt = elapsed
                if step >= JUMP_IS_GAP_S and ctx.companion is not None:
                    # issue 24: a forward jump is a gap she did not live (one gap event, her day resumed from
                    # now), not a month of invented activities in one beat
                    await ctx.store.call(resume_after_jump, ctx.settings, ctx.services.get("persona"), step, now)
            else:
                dt = max(0.0, now - ctx.last_beat_at)
            self._prev_wall, self._prev_mono = now, mono
            if lag_ms > self.settings.heartbeat.lag_warn_ms:
                self.log.warning("heartbeat.lag", lag_ms=round(lag_ms, 1))
            await self._refresh_controls(ctx, now)
            for part in self.parts:
                try:
                    await part.beat(ctx, now, dt)
                except Exception as exc:  # one failing part must not stop her heart
                    self.log.error("component.failed", component=part.name, error=type(exc).__name__,
                                   detail=str(exc)[:200])
            ctx.last_beat_at = now
            ctx.loop_lag_ms = lag_ms
            if self.calendar is not None:
                self.calendar.nudge()  # what her clock says is due now (a stepped wall clock moves it)
            try:
                await ctx.store.call(_record_beat, now, time.time(), lag_ms)
            except StorageFullError:  # her heart (and the watchdog) go on while the disk is full
                self.log.warning("db.beat_unrecorded", reason="storage_full")
            await self._checkpoint()
            ctx.last_beat_mono = self.clock.monotonic()
            self.beats += 1
            self.notifier.notify("WATCHDOG=1", f"STATUS={self.status_line()}")
            self.log.debug("heartbeat.done", dt_s=round(dt, 3), lag_ms=round(lag_ms, 1))

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

    async def _refresh_controls(self, ctx: DaemonContext, now: float) -> None:
        ctx.switches = await ctx.store.call(read_switches)  # one read per beat, replaced whole
        ctx.controls = ctx.switches.legacy()
        await self._log_recorded_writes()

    async def _log_recorded_writes(self) -> None:
        """Log each write another process recorded in event_log since the last beat, once, by its one name.

        Reading the events rather than diffing switch values is what catches a change and its undo
        within one beat, and gives CLI writes (which have no log of their own) a line in ours. The
        API logs its own writes as they happen (actor "api"), so they are skipped here.
        """
        assert self.ctx is not None
        while True:
            rows = await self.ctx.store.call(oplog.writes_after, self._event_cursor)
            for row in rows:
                self._event_cursor = row["id"]
                if row["name"] is None or row["detail"].get("actor") == "api":
                    continue
                self.log.info(row["name"], event_id=row["id"], **row["detail"])
                if row["name"] == CHANGED_EVENT and row["detail"].get("alias"):  # changed under an old name
                    self.log.info(DEPRECATED_EVENT, event_id=row["id"], key=row["detail"]["alias"],
                                  now=row["detail"].get("key"), actor=row["detail"].get("actor"))
            if len(rows) < 500:
                return

    def status_line(self) -> str:
        ctx = self.ctx
        if ctx is None:
            return "starting"
        name = ctx.companion["name"] if ctx.companion else "?"
        summary = ctx.services.get("status_summary")
        extra = f" {summary()}" if callable(summary) else ""
        return f"{name}: beat ok, lag {ctx.loop_lag_ms:.0f} ms{extra}"

    async def reload(self) -> None:
        """SIGHUP: re-read config.toml; apply what can change live, name what needs a restart.

        Parts that build something from a setting at start (the socket, the embedding model, the
        database path) would silently keep the old value, so those keys are kept as they run and
        logged as `config.deferred`; everything read per request or per beat is applied.
        """
        try:
            fresh, _ = load_settings(str(self.config_file) if self.config_file else None)
        except AnimaError as exc:
            self.log.error("config.reload_failed", error=str(exc))
            return
        merged, applied, needs_restart = live_reload(self.settings, fresh)
        if merged.log != self.settings.log:
            configure_logging(merged.log.format, merged.log.level)
        interval_changed = merged.heartbeat.interval_s != self.settings.heartbeat.interval_s
        self.settings = merged
        hers = her_settings(merged, self.ctx.companion if self.ctx else None)
        if self.ctx:
            self.ctx.settings = hers
        if interval_changed:
            self._rescheduled.set()
        if self.calendar is not None:
            self.calendar.reschedule(hers)
        self.log.info("config.reloaded", applied=applied, heartbeat_s=merged.heartbeat.interval_s,
                      log_format=merged.log.format, log_level=merged.log.level)
        if needs_restart:
            self.log.warning("config.deferred", keys=needs_restart)


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
            try:
                async with asyncio.timeout(STOP_STEP_TIMEOUT_S):
                    await ctx.store.call(_record_stop, self.clock.now(), time.time())
            except Exception as exc:  # then the next start's gap says clean_stop: false, which is the truth on file
                self.log.warning("daemon.stop_unrecorded", error=type(exc).__name__)
            await ctx.store.close()
        self.log.info("daemon.stopped")


async def _first_of(*waits: Any) -> None:
    """Return when the first of `waits` (coroutines) is done; cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def _record_beat(conn: Any, now: float, wall: float, lag_ms: float) -> None:
    daemon_beat(conn, now, wall, lag_ms)


def _record_stop(conn: Any, now: float, wall: float) -> None:
    with transaction(conn):  # the stop mark and its event together: a half-recorded stop is no clean stop
        daemon_stopped(conn, now, wall)
        log_event(conn, now, "stop", pid=os.getpid())
