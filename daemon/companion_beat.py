"""One companion's heartbeats: what a beat carries to the next, running daemon/beat.STEPS on her store, their loop side.

Single-file mode (daemon/app.py) holds one of these for her; a directory host holds one per served
companion (daemon/runtime.py). Both run the same steps, the same way: `prepare(due)` makes the beat's
work (a function of her connection), which runs on her DB lane (`beat`) or on the host's beat lane
(daemon/beat_lane.py), and `_finish` applies its result on the event loop (daemon/beat.apply_beat).
The modes differ only in what they hand in: the job worker and the API (whatever is running; None
runs no job step, no token step), how often the job and checkpoint steps come round, and whether her
checkpoints are hers (a host) or a checkpointer thread's (single-file mode).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Callable
from typing import Any

from daemon.beat import BeatInput, BeatResult, apply_beat, beat_on, checkpoint_on, run_checkpoint
from daemon.beat_lane import BeatLane, LaneBeat
from daemon.clock import wall_step
from daemon.component import ApiSteps, DaemonContext, JobSlots
from engine.control import CHANGED_EVENT, DEPRECATED_EVENT, Switches
from engine.errors import StorageFullError
from engine.store import transaction
from engine.store.core import daemon_stopped, log_event
from engine.store.tokens import token_digests
from engine.store.types import Conn

STOP_STEP_TIMEOUT_S = 3.0


class CompanionBeat:
    """Her beats' state between beats and their loop side (implements daemon.beat.BeatHost)."""

    def __init__(self, ctx: DaemonContext, log: Any, *, handle: str | None,
                 worker: Callable[[], JobSlots | None], api: Callable[[], ApiSteps | None],
                 lane: Callable[[], BeatLane | None] = lambda: None,
                 jobs_every: int = 1, checkpoint_every: int = 0, cycle_offset: int = 0):
        self.ctx = ctx
        self.log = log
        self.handle = handle
        self.clock = ctx.clock
        self._worker = worker
        self._api = api
        self._lane = lane  # a host's beat lane: her checkpoints run on it (None: on her own thread)
        self.jobs_every = jobs_every
        self.checkpoint_every = checkpoint_every  # 0: her checkpoints are the process's own checkpointer's
        self.cycle_offset = cycle_offset
        self.event_cursor = 0
        self.beats = 0
        self.clock_steps = 0
        self.beating = False
        self.last_lag_ms = 0.0
        self.future: asyncio.Future[Any] | None = None
        self._prev_wall = ctx.clock.now()
        self._prev_mono = ctx.clock.monotonic()
        self._seen: tuple[int, int] | None = None  # the last beat's marks (BeatResult.seen)
        self._memory_high = 0
        self._offers_due_at: float | None = None

    def stats(self) -> dict[str, Any]:
        """For /v1/health and `anima doctor`: beats so far and wall-clock steps seen (monotonic-based)."""
        return {"beats": self.beats, "clock_steps": self.clock_steps}

    def restart_from(self, now: float, mono: float) -> None:
        """The clock readings the next beat's wall-step check compares against (her start)."""
        self._prev_wall, self._prev_mono = now, mono

    async def beat(self, due_mono: float) -> Exception | None:
        """One beat on her DB lane; what made it fail as a whole (logged already by `_finish`), else None."""
        future, work = self.prepare(due_mono)
        self.ctx.store.enqueue(future, work, False)
        try:
            await future
        except Exception as exc:
            return exc
        return None

    def prepare(self, due_mono: float) -> tuple[asyncio.Future[Any], Callable[[Conn, bool], BeatResult]]:
        """Her next beat as (future, work): `work(conn, on_lane)` runs it; the future is done once `_finish` applied it.

        No task and no coroutine per beat: a thousand companions would spend more on the event loop's
        machinery than on their lives. What the beat reads of her runtime is taken now, on the loop;
        the clock is read when the work starts, so the lag it reports includes any wait in a queue.
        """
        ctx = self.ctx
        worker, api, indexer = self._worker(), self._api(), ctx.vector_indexer
        js = ctx.settings.jobs
        owner = worker.owner if worker is not None and worker.has_room(self.handle) else None
        cycle = self.beats + self.cycle_offset
        every = self.checkpoint_every
        beat = BeatInput(now=0.0, wall=0.0, lag_ms=0.0, event_cursor=self.event_cursor,
                         indexed_upto=indexer.drain.indexed_upto if indexer else 0,
                         jobs=worker is not None and (self.beats == 0 or cycle % self.jobs_every == 0),
                         claim_owner=owner, lease_s=js.lease_s, backoff_s=tuple(js.backoff_s),
                         db_path=str(ctx.db_path), api_step=api.step if api is not None else None,
                         checkpoint=every > 0 and cycle % every == every - 1, checkpoints=every > 0,
                         clock_step=None, seen=self._seen, switches=ctx.switches, memory_high=self._memory_high,
                         offers_due_at=self._offers_due_at)
        settings, persona, has_companion = ctx.settings, ctx.persona, ctx.companion is not None

        def work(conn: Conn, on_lane: bool) -> BeatResult:
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
        self.future = future
        future.add_done_callback(self._finish)
        return future, work

    def _finish(self, done: asyncio.Future[Any]) -> None:
        self.beating = False
        if done.cancelled():
            return
        exc = done.exception()
        if exc is not None:  # the batch catches its steps' errors: this is the thread or the connection
            self._seen = None
            self.log.error("heartbeat.failed", error=type(exc).__name__, detail=str(exc)[:200])
            return
        result: BeatResult = done.result()
        ctx = self.ctx
        self._seen, self._memory_high, self._offers_due_at = result.seen, result.memory_high, result.offers_due_at
        if result.clock_step is not None:
            self.clock_steps += 1
            self.log.warning("clock.stepped", step_s=result.clock_step[0], elapsed_s=result.clock_step[1])
        full = next((exc for _, exc in result.errors if isinstance(exc, StorageFullError)), None)
        if full is not None:  # her heart (and the watchdog) go on while the disk is full
            ctx.store.fault = str(full)
            self.log.warning("db.beat_unrecorded", reason="storage_full")
        elif result.beat_recorded:
            ctx.store.fault = None
        apply_beat(self, result)
        self._checkpoint_after(result)
        ctx.last_beat_at = result.now
        ctx.loop_lag_ms = result.lag_ms
        ctx.last_beat_mono = self.clock.monotonic()
        self.last_lag_ms = result.lag_ms
        self.beats += 1

    # -- daemon.beat.BeatHost: what the steps' loop sides act on ------------------------------------------
    def switches_read(self, switches: Switches) -> None:
        if switches != self.ctx.switches:  # legacy() costs 0.03 ms: on change only
            self.ctx.switches = switches
            self.ctx.controls = switches.legacy()

    def log_writes(self, rows: list[dict[str, Any]]) -> None:
        """Log each write another process recorded, once, by its one name.

        Reading the events rather than diffing switch values is what catches a change and its undo
        within one beat, and gives CLI writes (which have no log of their own) a line in ours. The
        API logs its own writes as they happen (actor "api"), so they are skipped here.
        """
        for row in rows:
            self.event_cursor = row["id"]
            if row["name"] is None or row["detail"].get("actor") == "api":
                continue
            self.log.info(row["name"], event_id=row["id"], **row["detail"])
            if row["name"] == CHANGED_EVENT and row["detail"].get("alias"):  # changed under an old name
                self.log.info(DEPRECATED_EVENT, event_id=row["id"], key=row["detail"]["alias"],
                              now=row["detail"].get("key"), actor=row["detail"].get("actor"))

    def summarise(self, mood: dict[str, Any], activity: str | None) -> None:
        self.ctx.status_summary = summary_line(mood, activity)

    def start_job(self, job: Any) -> None:
        worker = self._worker()
        if worker is not None:
            worker.start_job(self.handle, self.ctx, job)

    def wake_indexer(self) -> None:
        if self.ctx.vector_indexer is not None:
            self.ctx.vector_indexer.wake()

    def take_token_digests(self, digests: Any) -> None:
        api = self._api()
        if api is not None:
            api.apply(self.handle, self.ctx, digests)

    # -- her checkpoint, when the beat left it due ---------------------------------------------------------------
    def _checkpoint_after(self, result: BeatResult) -> None:
        """Run the checkpoint her beat on the beat lane left due: on the beat lane again, after its group.

        Not inside her beat: its fsync (~4 ms) would delay the beats after hers in the group. Not on her
        own thread either: at rest she has none, and starting one for each checkpoint (every 8th beat)
        was what an idle host's companions still started threads for (issue 26's census, bench/many.py).
        """
        if result.checkpoint is not None:
            self._log_checkpoint(result.checkpoint)
            return
        mode = result.checkpoint_mode
        if mode is None:
            return
        lane = self._lane()
        if lane is None:
            with contextlib.suppress(ValueError):  # closing: her close checkpoints anyway
                self.ctx.store.submit(run_checkpoint, mode).add_done_callback(self._checkpoint_done)
            return
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.add_done_callback(self._checkpoint_done)
        lane.submit([LaneBeat(self.ctx.store, future, functools.partial(checkpoint_on, mode))])

    def _checkpoint_done(self, done: asyncio.Future[Any]) -> None:
        if done.cancelled():
            return
        exc = done.exception()
        if isinstance(exc, ValueError) and "closed" in str(exc):
            return  # she closed meanwhile: her close checkpoints anyway
        if exc is not None:
            self.log.error("component.failed", component="checkpoint", error=type(exc).__name__, detail=str(exc)[:200])
        else:
            self._log_checkpoint(done.result())

    def _log_checkpoint(self, outcome: tuple[int, int, int]) -> None:
        busy, frames, copied = outcome
        if frames:
            self.log.debug("db.checkpoint", wal_frames=frames, copied=copied, busy=busy)

    async def settle(self) -> None:
        """Let a beat already handed out land (bounded): before she closes."""
        beat = self.future
        if beat is not None and not beat.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(beat), STOP_STEP_TIMEOUT_S)


def summary_line(mood: dict[str, Any], activity: str | None) -> str:
    """Her state in a few words for systemd's STATUS= (no text of hers)."""
    return f"mood {mood['label']} energy {mood['e']:.2f} doing {activity or '-'}"


async def record_stop(ctx: DaemonContext, log: Any) -> None:
    """Her clean stop on file (bounded: a stop always completes); then close her store."""
    try:
        async with asyncio.timeout(STOP_STEP_TIMEOUT_S):
            await ctx.store.call(_record_stop, ctx.clock.now(), time.time())
    except Exception as exc:  # then the next start's gap says clean_stop: false, which is the truth on file
        log.warning("daemon.stop_unrecorded", error=type(exc).__name__)
    await ctx.store.close()


def _record_stop(conn: Conn, now: float, wall: float) -> None:
    with transaction(conn):  # the stop mark and its event together: a half-recorded stop is no clean stop
        daemon_stopped(conn, now, wall)
        log_event(conn, now, "stop", pid=os.getpid())


class ApiBeat:
    """The API's share of a companion's beat (ApiSteps): her token digests read inside her one batched beat,
    so `anima token` on a running daemon takes effect within one beat, then handed to the API's token book."""

    def __init__(self, server: Any):
        self.server = server  # daemon.api.server.ApiServer

    @staticmethod
    def step(conn: Conn) -> Any:
        return token_digests(conn)

    def apply(self, handle: str | None, ctx: DaemonContext, digests: Any) -> None:
        from daemon.api.state import APP  # the API's own module, loaded only where an API runs

        app = self.server.app
        if app is not None:
            app[APP].tokens.read(handle, ctx, digests)

    def stopped(self, handle: str) -> None:
        self.server.companion_stopped(handle)
