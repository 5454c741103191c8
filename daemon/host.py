"""`anima run --dir DIR`: one process serving every companion file of a directory, added and removed at runtime.

Each `DIR/<handle>.db` (handle per daemon/registry.HANDLE_PATTERN) is one companion with single-file
mode's per-file rules (lock, migrate, gap event, quick_check; daemon/runtime.py). What is shared: one
event loop, one heartbeat schedule (beats in groups, one a second, spread evenly over the interval:
daemon/beat_schedule.py; a group's beats run back to back on one thread, daemon/beat_lane.py), one embedding
model, one indexing loop and thread (companions take turns, daemon/index_queue.py), bounded job slots, one
interactive gate and ONE API server for all of them (the host is the CompanionRegistry it serves).

Which files are served is decided by scans: at start, on SIGHUP, and every `[daemon] watch_s` by a
cheap listing of the directory. A new file is opened, a removed one (or one with a `<handle>.stop`
marker: how an operator drains a host or moves one companion) is closed and its lock released. A file
that cannot be opened (corrupt, locked by another daemon, newer schema, full disk) is not served and
`fault(handle)` says why in one line; it is retried when its file changes or on SIGHUP, and the
others go on beating.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import signal
import time
from pathlib import Path
from typing import Any

from daemon.beat_lane import BeatLane, LaneBeat
from daemon.beat_schedule import BeatSchedule, spread_phases
from daemon.clock import Clock
from daemon.companion_beat import ApiBeat
from daemon.companions_dir import list_directory
from daemon.component import DaemonContext
from daemon.config import reload_settings
from daemon.db import AsyncStore
from daemon.index_queue import IndexQueue
from daemon.lag_stats import LagStats
from daemon.logs import get_logger
from daemon.malloc_trim import TRIM_EVERY_S, fix_mmap_threshold, trim
from daemon.priority import InteractiveGate
from daemon.runtime import CompanionRuntime, Shared
from daemon.scheduler import Calendar
from daemon.sdnotify import Notifier, refuse_if_watchdog_too_tight
from daemon.worker import SharedWorker
from engine.errors import AnimaError, ConfigError, LockedError
from engine.home import her_settings
from engine.settings import Settings

RACY_S = 2.0  # a directory mtime this close to now may hide a change made in the same tick as our listing
OPEN_CONCURRENCY = 4  # files opened at once at start (quick_check + migrate each): 2 cores, some I/O
# Files closed at once at shutdown (stop record, last checkpoint): a thousand at once contended for the
# interpreter lock until some missed their 3 s stop-record bound and stopped unrecorded.
CLOSE_CONCURRENCY = 8
DRAIN_TIMEOUT_S = 8.0


def apply_cache_budget(settings: Settings) -> None:
    """Every companion's RAM caches under `[daemon] cache_budget_mb` together (engine/store/caches.py).

    The budget's owner (issue 14's cache work) lands `caches.set_budget`; until it has, there is no
    budget to set and the caches keep their own limits.
    """
    from engine.store import caches

    set_budget = getattr(caches, "set_budget", None)
    if callable(set_budget):
        set_budget(settings.daemon.cache_budget_mb * 1024 * 1024)


def companion_settings(settings: Settings) -> Settings:
    """The settings a companion of the directory lives by: her heartbeat is [daemon] beat_s.

    Everything that counts in her beats (health's freshness, the jobs and checkpoints every n-th
    beat, /v1/state's heartbeat_s) then reads her real beat, while the process keeps
    [heartbeat] interval_s for its own watchdog ping.
    """
    return dataclasses.replace(settings, heartbeat=dataclasses.replace(settings.heartbeat,
                                                                       interval_s=settings.daemon.beat_s))


def load_embedder(settings: Settings) -> Any:
    from engine.memory.embed import make_embedder

    embedder = make_embedder(settings.memory)
    embedder.embed_queries(["warm up"])
    return embedder


class Host:
    """Serves every companion of a directory; implements daemon.registry.CompanionRegistry for the API."""

    def __init__(self, settings: Settings, folder: Path, clock: Clock, config_file: Path | None,
                 embedder: Any = None, api: bool = True):
        self.settings = settings
        self.folder = folder
        self.clock = clock
        self.config_file = config_file
        self.log = get_logger()
        self.notifier = Notifier()
        self.with_api = api
        self._embedder = embedder
        self.shared: Shared | None = None
        self.runtimes: dict[str, CompanionRuntime] = {}
        self._faults: dict[str, str] = {}
        self._fault_sig: dict[str, tuple[int, int]] = {}
        self._locked: set[str] = set()  # faulted because another process held the lock: retried at every scan
        self._opening: set[str] = set()
        self._ignored_logged: set[str] = set()
        self.schedule = BeatSchedule(settings.daemon.beat_s, clock.monotonic())
        # One object for every companion: engine/life caches the beat's context by the settings' identity.
        self.companion_settings = companion_settings(settings)
        self.stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._beats: set[asyncio.Future[Any]] = set()
        self.lane: BeatLane | None = None  # the one thread every heartbeat runs on (start() makes it)
        self._scan_lock = asyncio.Lock()
        self.lag_stats = LagStats()  # how late beats start: GET /v1/health's heartbeat_lag
        self.beats = 0
        self.api_server: Any = None
        self._next_watch = 0.0
        self._dir_stamp: int | None = None  # the directory's mtime at the last settled watch scan
        self._next_ping = 0.0
        self._next_trim = 0.0
        self._trimming: asyncio.Future[bool] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._watching: asyncio.Future[None] | None = None
        self._timers_on = False  # run(): beats come from the timer; tests drive tick() with a FakeClock
        self.calendar: Calendar | None = None  # one apscheduler for the host, each firing fans out (daemon/scheduler.py)

    # -- CompanionRegistry -------------------------------------------------------------------------
    @property
    def single(self) -> DaemonContext | None:
        return None

    def get(self, handle: str) -> DaemonContext | None:
        runtime = self.runtimes.get(handle)
        return runtime.ctx if runtime is not None else None

    def handles(self) -> list[str]:
        return sorted(h for h, rt in self.runtimes.items() if rt.ctx is not None)

    def fault(self, handle: str) -> str | None:
        return self._faults.get(handle)

    def faults(self) -> dict[str, str]:
        """Every known companion not served, with why (GET /v1/companions lists them)."""
        return dict(self._faults)

    def heartbeat_lag(self) -> dict[str, Any]:
        """How late the beats start (GET /v1/health's heartbeat_lag): the last minutes' percentiles, running counts."""
        return self.lag_stats.summary(self.clock.monotonic(), self.settings.heartbeat.lag_warn_ms)

    def db_threads(self) -> dict[str, int]:
        """The companions' connection threads (GET /v1/health's db_threads): one for each who has work now.

        `threads` counts the process's aiosqlite threads alive (daemon/db.py), `idle` those of them with
        no call queued (waiting out their idle time), `peak` the most alive at once since start.
        """
        from daemon.db import THREADS

        busy = sum(1 for rt in self.runtimes.values() if rt.ctx is not None and rt.ctx.store.busy)
        return {"threads": THREADS.alive, "idle": max(0, THREADS.alive - busy), "peak": THREADS.peak}

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self) -> None:
        """Load the shared services, scan, open every companion found, start the API."""
        if not self.folder.is_dir():
            raise ConfigError(f"companions directory {self.folder} does not exist; create it and put companions "
                              "in it with: anima init --dir DIR --id HANDLE ...")
        started = time.monotonic()
        fix_mmap_threshold()  # before the threads: a recall's big buffers unmapped when freed (daemon/malloc_trim.py)
        embedder = self._embedder or await asyncio.to_thread(load_embedder, self.settings)
        self.log.info("memory.embedder_ready", model=embedder.name, dim=embedder.dim,
                      ms=round(1000 * (time.monotonic() - started), 1))
        apply_cache_budget(self.settings)
        gate = InteractiveGate()
        self.shared = Shared(embedder=embedder, index_queue=IndexQueue(gate), worker=SharedWorker(), gate=gate,
                             socket=str(host_socket(self).absolute()))
        self.shared.index_queue.start()
        self.lane = self.shared.beat_lane = BeatLane(asyncio.get_running_loop())
        self.lane.start()
        await self.scan(retry_faults=True)
        self.calendar = Calendar(self.companion_settings, self.clock, self._calendar_targets, self.log)
        self.calendar.start()
        await asyncio.to_thread(trim)  # what opening a thousand files freed
        if self.with_api:
            self.api_server = await start_api(self)
            self.shared.api = ApiBeat(self.api_server)  # her beat's "api" step (daemon/beat.py) reads her tokens
        mono = self.clock.monotonic()
        self._next_watch = mono + self.settings.daemon.watch_s
        self._next_ping = mono
        self._next_trim = mono + TRIM_EVERY_S

    async def run(self) -> int:
        """The foreground process: start, beat and watch until SIGTERM, then close every companion."""
        refuse_if_watchdog_too_tight(self.notifier, self.settings.heartbeat.interval_s)
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self._stop_soon)
        loop.add_signal_handler(signal.SIGINT, self._stop_soon)
        loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(self.reload()))
        try:
            await self.start()
            self.notifier.notify("READY=1", f"STATUS={self.status_line()}")
            self.log.info("host.ready", pid=os.getpid(), companions=len(self.runtimes), faulted=len(self._faults),
                          heartbeat_s=self.settings.heartbeat.interval_s, beat_s=self.settings.daemon.beat_s,
                          watch_s=self.settings.daemon.watch_s)
            warm = asyncio.ensure_future(asyncio.to_thread(_warm_recall, self.shared))
            await self._loop()
            warm.cancel()
        finally:
            await self.shutdown()
        return 0

    def _stop_soon(self) -> None:
        self.stopping.set()
        self._wake.set()

    async def _loop(self) -> None:
        """The watch and the watchdog ping, every few seconds; beats run from their own timer (`_arm`)."""
        self._timers_on = True
        self._arm()
        while not self.stopping.is_set():
            await self._tick(beats=False, background=True)
            self._arm()
            mono = self.clock.monotonic()
            deadline = self._next_ping
            if self.settings.daemon.watch_s > 0 and not self._scanning():
                # A watch due while the last scan still runs waits for that scan (its end sets _wake): else
                # the deadline stays in the past and this loop spins without yielding, starving the scan
                # itself (a companion's close under load never finished, and neither did anything else).
                deadline = min(deadline, self._next_watch)
            wait = deadline - mono
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                self._wake.clear()
            else:
                await asyncio.sleep(0)  # whatever is due, the loop's other work gets its turn first
        self._timers_on = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._watching is not None:
            with contextlib.suppress(Exception):
                await self._watching  # a scan half-way opens what it started; shutdown closes it

    def _scanning(self) -> bool:
        return self._watching is not None and not self._watching.done()

    def _arm(self) -> None:
        """Set the one beat timer for the earliest due companion (loop.call_at: no coroutine step per beat)."""
        if self.stopping.is_set():
            return
        at = self.schedule.next_at()
        if at is None:
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + max(0.0, at - self.clock.monotonic())
        if self._timer is not None:
            if self._timer.when() <= when + 1e-4:
                return  # already set for this or an earlier beat
            self._timer.cancel()
        self._timer = loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self.launch_due(self.clock.monotonic())
        finally:  # whatever happened, the next beat gets its timer (the watch loop re-arms too)
            self._arm()

    async def tick(self, beats: bool = True) -> None:
        """Whatever is due now: the watchdog ping, the directory watch (awaited), beats (started, not awaited).

        `run()` uses it with beats=False and the scan in the background (`background=True`): opening
        a batch of newly copied companions takes seconds, and neither the ping nor a beat may wait for it.
        """
        await self._tick(beats, background=False)

    async def _tick(self, beats: bool, background: bool) -> None:
        mono = self.clock.monotonic()
        if mono >= self._next_ping:  # first: systemd's watchdog must hear from us whatever else is slow
            self._next_ping = mono + self.settings.heartbeat.interval_s
            self.notifier.notify("WATCHDOG=1", f"STATUS={self.status_line()}")
        watch_s = self.settings.daemon.watch_s
        if watch_s > 0 and mono >= self._next_watch and not self._scanning():
            self._next_watch = mono + watch_s
            if background:
                self._watching = asyncio.ensure_future(self._watch_scan())
                self._watching.add_done_callback(lambda _: self._wake.set())
            else:
                await self._watch_scan()
        if background and mono >= self._next_trim and (self._trimming is None or self._trimming.done()):
            self._next_trim = mono + TRIM_EVERY_S
            self._trimming = asyncio.ensure_future(asyncio.to_thread(trim))
        if self.calendar is not None:
            self.calendar.nudge()  # what her clock says is due now (a stepped wall clock moves it)
        if beats:
            self.launch_due(mono)

    def _calendar_targets(self) -> list[tuple[str, AsyncStore, Settings]]:
        return [(handle, rt.ctx.store, rt.ctx.settings) for handle, rt in self.runtimes.items() if rt.ctx is not None]

    async def _watch_scan(self) -> None:
        """The directory watch: a full scan only when the directory may have changed since the last one.

        Adding, removing or renaming a file, or touching a .stop marker, changes the directory's own
        mtime, so one stat says whether a listing (a stat of every companion file: 40-50 % of an idle
        host's CPU at 1,000 companions) can find anything new. A stamp within RACY_S of now is not
        trusted (a change in the same clock tick as the last listing leaves the same stamp), and
        while any file is faulted every watch lists, since a fault is retried when its file changes.
        """
        try:
            stamp = os.stat(self.folder).st_mtime_ns
            settled = time.time_ns() - stamp > RACY_S * 1e9
            if stamp == self._dir_stamp and settled and not self._faults:
                return
            await self.scan()
            self._dir_stamp = stamp if settled else None
        except OSError as exc:  # the directory went away or is unreadable: keep serving what is open
            self.log.error("host.scan_failed", error=type(exc).__name__)

    def launch_due(self, mono: float) -> int:
        """Hand the beat of every companion due by `mono` to the beat lane in one group; returns how many were due.

        One thread runs the group back to back (daemon/beat_lane.py): started together on their own
        threads, a second's beats contend for the one interpreter lock and cost more than run in turn
        (measured: bench/many.py's note), and each hop to a thread of its own finds that thread cold.
        A companion whose connection is busy gets her beat on her own thread; the group goes on.
        """
        due = self.schedule.pop_due(mono)
        group: list[LaneBeat] = []
        for handle, due_at in due:
            runtime = self.runtimes.get(handle)
            if runtime is None or runtime.ctx is None:
                continue
            if runtime.beating:
                runtime.log.warning("heartbeat.skipped", reason="previous beat still running")
                continue
            future, work = runtime.prepare_beat(due_at)
            self._beats.add(future)
            future.add_done_callback(functools.partial(self._beat_done, runtime))
            group.append(LaneBeat(runtime.ctx.store, future, work))
        if group:
            assert self.lane is not None, "Host.start() first"
            self.lane.submit(group)
        return len(due)

    def _beat_done(self, runtime: CompanionRuntime, done: asyncio.Future[Any]) -> None:
        self._beats.discard(done)
        if done.cancelled() or done.exception() is not None:
            return  # logged by the runtime
        lag_ms = runtime.last_lag_ms
        warn_ms = self.settings.heartbeat.lag_warn_ms
        self.lag_stats.add(self.clock.monotonic(), lag_ms, warn_ms)
        self.beats += 1
        if lag_ms > warn_ms:
            runtime.log.warning("heartbeat.lag", lag_ms=round(lag_ms, 1))

    async def beats_done(self) -> None:
        """Wait for every beat started so far (tests, shutdown)."""
        while self._beats:
            await asyncio.gather(*list(self._beats), return_exceptions=True)
            await asyncio.sleep(0)  # their done-callbacks run on the next loop turn

    # -- scans ---------------------------------------------------------------------------------------
    async def scan(self, retry_faults: bool = False) -> dict[str, list[str]]:
        """Serve what the directory holds now: open new files, close removed or .stop-marked ones.

        A faulted file is retried when its file changed since the fault (`retry_faults`: always, SIGHUP);
        a file another process held locked is retried at every scan, since a lock is let go without the
        file changing (an `anima restore` or a single-file daemon that finished).
        Returns what changed: {"opened": [...], "closed": [...], "faulted": [...]}.
        """
        async with self._scan_lock:
            listing = await asyncio.to_thread(list_directory, self.folder)
            for name in sorted(listing.ignored - self._ignored_logged):
                self._ignored_logged.add(name)
                self.log.info("companion.ignored", file=name)
            closed = []
            for handle in sorted(set(self.runtimes) - set(listing.wanted)):
                closed.append(handle)
                await self._close_one(handle, "stop_marker" if handle in listing.stopped else "removed")
            for handle in set(self._faults) - set(listing.wanted):  # gone, or marked: no longer a fault to report
                self._faults.pop(handle, None)
                self._fault_sig.pop(handle, None)
                self._locked.discard(handle)
            todo = []
            for handle, sig in sorted(listing.wanted.items()):
                if handle in self.runtimes or handle in self._opening:
                    continue
                if (handle in self._faults and not retry_faults and self._fault_sig.get(handle) == sig
                        and handle not in self._locked):
                    continue
                todo.append((handle, sig))
            first = not self.runtimes and not self.schedule.phase
            results = await self._open_many(todo)
            opened = [h for h, ok in results if ok]
            mono = self.clock.monotonic()
            if first and opened:
                for handle, phase in zip(opened, spread_phases(len(opened), self.schedule.interval_s), strict=True):
                    self.schedule.add(handle, mono, phase)
            else:
                for handle in opened:
                    self.schedule.add(handle, mono)
            faulted = [h for h, ok in results if not ok]
            if opened and self._timers_on:
                self._arm()  # a newcomer may be due before the timer
            return {"opened": opened, "closed": closed, "faulted": faulted}

    async def _open_many(self, todo: list[tuple[str, tuple[int, int]]]) -> list[tuple[str, bool]]:
        gate = asyncio.Semaphore(OPEN_CONCURRENCY)

        async def one(handle: str, sig: tuple[int, int]) -> tuple[str, bool]:
            async with gate:
                if self.stopping.is_set():  # SIGTERM during a start of a thousand: open no more of them
                    return handle, False
                return handle, await self._open_one(handle, sig)

        return list(await asyncio.gather(*(one(h, s) for h, s in todo)))

    async def _open_one(self, handle: str, sig: tuple[int, int]) -> bool:
        assert self.shared is not None
        log = _bound(self.log, handle)
        runtime = CompanionRuntime(handle, self.folder / f"{handle}.db", self.companion_settings, self.clock,
                                   log, self.shared)
        self._opening.add(handle)
        try:
            await runtime.open()
        except Exception as exc:
            reason = _one_line(exc)
            if isinstance(exc, LockedError):
                self._locked.add(handle)
            else:
                self._locked.discard(handle)
            if self._faults.get(handle) != reason:
                log.error("companion.faulted", error=type(exc).__name__, reason=reason)
            self._faults[handle] = reason
            self._fault_sig[handle] = sig
            return False
        finally:
            self._opening.discard(handle)
        if self.stopping.is_set():
            await runtime.close()
            return False
        self._faults.pop(handle, None)
        self._fault_sig.pop(handle, None)
        self._locked.discard(handle)
        self.runtimes[handle] = runtime
        if self.calendar is not None:  # her zone's calendar jobs (consolidation at 03:00 her time)
            self.calendar.watch_zone(runtime.settings.life.tz)
        log.info("companion.served", schema=runtime.schema)
        return True

    async def _close_one(self, handle: str, reason: str) -> None:
        runtime = self.runtimes.pop(handle)
        self.schedule.remove(handle)
        if self.shared is not None and self.shared.api is not None:
            self.shared.api.stopped(handle)  # her API state and token digests go with her
        try:
            await runtime.close()
        except Exception as exc:
            runtime.log.warning("companion.close_failed", error=type(exc).__name__)
        runtime.log.info("companion.stopped", reason=reason)

    # -- reload and stop ---------------------------------------------------------------------------
    async def reload(self) -> None:
        """SIGHUP: re-read config.toml (live keys applied, the rest named) and rescan, retrying faulted files."""
        merged = reload_settings(self.settings, self.config_file, self.log)
        if merged is not None:
            interval_changed = merged.daemon.beat_s != self.settings.daemon.beat_s
            if merged.daemon.cache_budget_mb != self.settings.daemon.cache_budget_mb:
                apply_cache_budget(merged)  # lowering it evicts now
            self.settings = merged
            hers = self.companion_settings = companion_settings(merged)
            if self.calendar is not None:
                self.calendar.reschedule(hers)
            for runtime in self.runtimes.values():
                runtime.settings = her_settings(hers, runtime.ctx.companion if runtime.ctx is not None else None)
                if runtime.ctx is not None:
                    runtime.ctx.settings = runtime.settings
            if interval_changed:
                self.schedule.respread(merged.daemon.beat_s, self.clock.monotonic())
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                if self._timers_on:
                    self._arm()
            self._next_watch = self.clock.monotonic() + merged.daemon.watch_s
        try:
            changed = await self.scan(retry_faults=True)
        except OSError as exc:
            self.log.error("host.scan_failed", error=type(exc).__name__)
            return
        self._wake.set()
        self.log.info("host.rescanned", opened=len(changed["opened"]), closed=len(changed["closed"]),
                      faulted=len(changed["faulted"]), companions=len(self.runtimes))

    async def shutdown(self) -> None:
        self.notifier.notify("STOPPING=1", "STATUS=stopping")
        self.log.info("daemon.stopping", companions=len(self.runtimes))
        started = time.monotonic()
        self.stopping.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                await self.beats_done()
        if self.api_server is not None:
            await self.api_server.stop()
            self.api_server = None
        if self.calendar is not None:
            await self.calendar.stop()
        if self.shared is not None:
            await self.shared.worker.stop(self.log)
        drained = time.monotonic()
        async with self._scan_lock:
            closing = list(self.runtimes)
            gate = asyncio.Semaphore(CLOSE_CONCURRENCY)

            async def one(handle: str) -> None:
                async with gate:
                    await self._close_one(handle, "shutdown")

            await asyncio.gather(*(one(h) for h in closing), return_exceptions=True)
        if self.lane is not None:
            await asyncio.to_thread(self.lane.stop)
            self.lane = None
            if self.shared is not None:
                self.shared.beat_lane = None
        if self.shared is not None:
            await self.shared.index_queue.stop()
        self.notifier.close()
        self.log.info("daemon.stopped", closed=len(closing), drain_s=round(drained - started, 2),
                      close_s=round(time.monotonic() - drained, 2))

    def status_line(self) -> str:
        return f"{len(self.runtimes)} companions, {len(self._faults)} faulted, {self.beats} beats"



def _bound(log: Any, handle: str) -> Any:
    bind = getattr(log, "bind", None)
    return bind(companion=handle) if callable(bind) else log


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, AnimaError) else f"{type(exc).__name__}: {text}"[:300]


def _warm_recall(shared: Shared | None) -> None:
    if shared is None:
        return
    from engine.memory import recall

    with contextlib.suppress(Exception):  # a stand-in embedder (tests) has nothing to warm
        recall.warm(shared.embedder)


# -- the API ---------------------------------------------------------------------------------------
async def start_api(host: Host) -> Any:
    """ONE API server for every companion (daemon/api/server.ApiServer over the host as its registry).

    Socket: [api] socket_path, else $RUNTIME_DIRECTORY / $STATE_DIRECTORY anima.sock, else DIR/anima.sock.
    """
    from daemon.api.server import ApiServer

    server = ApiServer(host, host.settings, host.log, host_socket(host))
    await server.start()
    return server


def host_socket(host: Host) -> Path:
    """The host's API socket (see start_api)."""
    from daemon.api.listen import socket_path

    return socket_path(host.settings.api, host.folder / "anima", os.environ)
