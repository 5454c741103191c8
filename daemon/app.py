"""The main loop: lock, migrate, recover, start the parts, beat, and drain on SIGTERM.

Start order: take the exclusive lock, migrate, make sure she exists (a demo companion on first
start), write one `gap` event for the downtime since the last beat, start the parts listed in
daemon/components.py, then tell systemd READY=1. Every heartbeat records liveness and loop lag,
re-reads life_control, steps each part and pets the watchdog. SIGTERM drains and exits 0;
SIGHUP reloads config.toml.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from daemon.checkpoint import WalCheckpointer, hand_over_checkpoints
from daemon.clock import Clock
from daemon.component import Component, DaemonContext
from daemon.components import COMPONENTS
from daemon.config import load_settings
from daemon.db import AsyncStore
from daemon.logs import configure_logging, get_logger
from daemon.sdnotify import Notifier
from engine.companion import create_companion
from engine.errors import AnimaError, StorageFullError
from engine.settings import Settings
from engine.store import connect, driver_name, migrate, transaction
from engine.store.connect import quick_check, store_fault
from engine.store.core import controls as read_controls
from engine.store.core import daemon_state, get_companion, log_event
from engine.store.lock import DaemonLock
from engine.store.migrate import check_not_newer, db_schema_version
from engine.store.queries import q

DRAIN_TIMEOUT_S = 8.0
STOP_STEP_TIMEOUT_S = 3.0


def prepare_database(db_path: Path, settings: Settings, now: float, log: Any) -> dict[str, Any]:
    """Check the file, migrate, create the demo companion if none, and record the gap since the last beat.

    Returns what recovery learnt: the previous last beat (her time) and the companion row. A file
    that is not a healthy anima database is refused here (DamagedStoreError, one line), before
    she writes anything into it; a full disk is StorageFullError, not a traceback.
    """
    try:
        return _prepare(db_path, settings, now, log)
    except Exception as exc:
        fault = store_fault(exc, db_path)
        if fault is None or fault is exc:
            raise
        raise fault from exc


def _prepare(db_path: Path, settings: Settings, now: float, log: Any) -> dict[str, Any]:
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
            )
            log.info("companion.created", demo=True, birth_tz=demo.demo_tz)
        # One transaction: the gap, the new run's row (stopped_at = NULL) and its start event land
        # together or not at all, so a start that failed (disk full) leaves the previous run's
        # record as it was, and a run that is later killed can never inherit a clean stop.
        with transaction(conn):
            previous = daemon_state(conn)
            last_beat = previous["last_beat_at"] if previous else None
            clean_stop = bool(previous and previous["stopped_at"] is not None)
            if last_beat is not None:
                gap_s = max(0.0, now - last_beat)
                log_event(conn, now, "gap", since=last_beat, until=now, seconds=round(gap_s, 3),
                          clean_stop=clean_stop)
            conn.execute(q("daemon_started"), {"pid": os.getpid(), "now": now, "wall": time.time()})
            log_event(conn, now, "start", pid=os.getpid(), schema=db_schema_version(conn), driver=driver_name())
        if last_beat is not None:  # logged once it is on file
            log.info("daemon.gap", seconds=round(max(0.0, now - last_beat), 3), clean_stop=clean_stop)
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
        self.scheduler: AsyncIOScheduler | None = None
        self.ctx: DaemonContext | None = None
        self._beat_lock = asyncio.Lock()
        self.checkpointer: WalCheckpointer | None = None
        self._last_beat_mono = 0.0

    async def run(self) -> int:
        self.lock.acquire()  # before migrating: a second daemon must not touch the file at all
        try:
            return await self._run_locked()
        finally:
            self.lock.release()
            self.notifier.close()

    async def _run_locked(self) -> int:
        now = self.clock.now()
        recovered = prepare_database(self.db_path, self.settings, now, self.log)
        store = await AsyncStore(self.db_path).open()
        await store.call(hand_over_checkpoints)
        self.checkpointer = WalCheckpointer(self.db_path)
        self.checkpointer.start(self.log)
        ctx = DaemonContext(settings=self.settings, db_path=self.db_path, clock=self.clock, store=store,
                            log=self.log, companion=recovered["companion"], started_at=now, last_beat_at=now)
        ctx.services["last_beat_before_start"] = recovered["last_beat_at"]
        ctx.controls = await store.call(read_controls)
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
            self._last_beat_mono = time.monotonic()
            self.scheduler = AsyncIOScheduler()
            self.scheduler.add_job(self.heartbeat, "interval", seconds=self.settings.heartbeat.interval_s,
                                   id="heartbeat", coalesce=True, max_instances=1, misfire_grace_time=None)
            self.scheduler.start()
            self._warn_if_watchdog_too_tight()
            self.notifier.notify("READY=1", f"STATUS={self.status_line()}")
            self.log.info("daemon.ready", pid=os.getpid(), db=str(self.db_path), schema=recovered["schema"],
                          driver=driver_name(), heartbeat_s=self.settings.heartbeat.interval_s,
                          parts=[p.name for p in self.parts])
            await self.stopping.wait()
        finally:
            await self.shutdown()
        return 0

    async def heartbeat(self) -> None:
        """One beat: liveness, loop lag, switches, each part's step, watchdog."""
        assert self.ctx is not None
        if self.stopping.is_set():
            return
        async with self._beat_lock:
            ctx = self.ctx
            mono = time.monotonic()
            lag_ms = max(0.0, (mono - self._last_beat_mono - self.settings.heartbeat.interval_s) * 1000)
            self._last_beat_mono = mono
            now = self.clock.now()
            dt = now - ctx.last_beat_at
            if dt < 0:
                self.log.warning("clock.backwards", seconds=round(-dt, 3))
                await ctx.store.call(log_event, now, "clock_backwards", seconds=-dt)
                dt = 0.0
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
            try:
                await ctx.store.call(_record_beat, now, time.time(), lag_ms)
            except StorageFullError:  # her heart (and the watchdog) go on while the disk is full
                self.log.warning("db.beat_unrecorded", reason="storage_full")
            await self._checkpoint()
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
        fresh = await ctx.store.call(read_controls)
        for key, value in fresh.items():
            old = ctx.controls.get(key)
            if old != value:
                self.log.info("control.changed", key=key, old=old, new=value)
        ctx.controls = fresh

    def status_line(self) -> str:
        ctx = self.ctx
        if ctx is None:
            return "starting"
        name = ctx.companion["name"] if ctx.companion else "?"
        summary = ctx.services.get("status_summary")
        extra = f" {summary()}" if callable(summary) else ""
        return f"{name}: beat ok, lag {ctx.loop_lag_ms:.0f} ms{extra}"

    async def reload(self) -> None:
        """SIGHUP: re-read config.toml; apply what can change live (log format/level, heartbeat interval)."""
        try:
            settings, _ = load_settings(str(self.config_file) if self.config_file else None)
        except AnimaError as exc:
            self.log.error("config.reload_failed", error=str(exc))
            return
        configure_logging(settings.log.format, settings.log.level)
        if self.scheduler and settings.heartbeat.interval_s != self.settings.heartbeat.interval_s:
            self.scheduler.reschedule_job("heartbeat", trigger="interval", seconds=settings.heartbeat.interval_s)
        self.settings = settings
        if self.ctx:
            self.ctx.settings = settings
        self.log.info("config.reloaded", heartbeat_s=settings.heartbeat.interval_s, log_format=settings.log.format)

    def _warn_if_watchdog_too_tight(self) -> None:
        half = self.notifier.watchdog_interval_s()
        if half is not None and self.settings.heartbeat.interval_s > half:
            self.log.warning("watchdog.too_tight", heartbeat_s=self.settings.heartbeat.interval_s,
                             watchdog_half_s=half)

    async def shutdown(self) -> None:
        self.notifier.notify("STOPPING=1", "STATUS=stopping")
        self.log.info("daemon.stopping")
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
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


def _record_beat(conn: Any, now: float, wall: float, lag_ms: float) -> None:
    conn.execute(q("daemon_beat"), {"now": now, "wall": wall, "lag_ms": lag_ms})


def _record_stop(conn: Any, now: float, wall: float) -> None:
    with transaction(conn):  # the stop mark and its event together: a half-recorded stop is no clean stop
        conn.execute(q("daemon_stopped"), {"now": now, "wall": wall})
        log_event(conn, now, "stop", pid=os.getpid())
