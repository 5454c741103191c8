"""A companion's heartbeat: ONE ordered list of steps (`STEPS`), the same in single-file and directory mode.

Each `BeatStep` has two halves. `work` runs on her connection, on a DB thread, inside the beat's one
write transaction (in a savepoint of its own when `guarded`): it reads and writes her file and leaves
what it found on the `BeatResult` (ids and counts, no text). `apply` runs afterwards on the event
loop, with no DB work: it logs and acts on what `work` found (starts a claimed job, wakes her
indexer, hands token digests to the API). Running the list is `beat_batch` (thread side) and
`apply_beat` (loop side); who beats whom, and when, is daemon/companion_beat.py's job for one
companion, daemon/app.py's for single-file mode and daemon/host.py's for a directory.

A new per-beat task is one entry in `STEPS` (its work and its apply, here): nothing else changes.

Why one transaction: a thousand companions beating every 60 s must fit in 2 % of a core, and one
commit instead of five saves ~0.15 ms of CPU and WAL frames a beat; the savepoints keep each step's
failure its own (rolled back alone and logged as `component.failed` with the step's name).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from daemon.beat_lane import Deferred
from daemon.checkpoint import WAL_SOFT_LIMIT_BYTES
from engine import jobs
from engine.control import Switches
from engine.errors import StorageFullError
from engine.inner import JUMP_IS_GAP_S, resume_after_jump, step_inner
from engine.jobs import registry, schedule
from engine.persona import Persona
from engine.settings import Settings
from engine.store import memory as memory_store
from engine.store import oplog
from engine.store.connect import BUSY_TIMEOUT_MS, store_fault
from engine.store.core import daemon_beat, log_event, read_switches
from engine.store.share import expire_offers, next_offer_expiry
from engine.store.types import Conn

SQLITE_BUSY, SQLITE_LOCKED = 5, 6
WRITES_PAGE = 500  # recorded writes read at a time (oplog.writes_after's page)


@dataclass(frozen=True)
class BeatInput:
    now: float
    wall: float
    lag_ms: float
    event_cursor: int
    indexed_upto: int
    jobs: bool  # this beat schedules due jobs and (with claim_owner) claims a ready one
    claim_owner: str | None  # a job slot is free: claim a ready job under this owner
    lease_s: float
    backoff_s: tuple[float, ...]
    db_path: str
    api_step: Any  # the API's part of the beat (her token digests), a function of the connection, or None
    checkpoint: bool  # a PASSIVE checkpoint is due this beat (a TRUNCATE one whenever the WAL is past its bound)
    clock_step: tuple[float, float] | None  # (step_s, elapsed_s) when the wall clock was stepped since the last beat
    checkpoint_here: bool = True  # False on the beat lane: a due checkpoint (an fsync) runs after the lane's group
    # What the last beat left (BeatResult.seen, .switches, .memory_high): when nothing was written to her file
    # since, by another process (data_version) or on her own connection (total_changes), this beat reuses them.
    seen: tuple[int, int] | None = None
    switches: Any = None
    memory_high: int = 0
    offers_due_at: float | None = None  # when her first open offer expires (None: none open)
    checkpoints: bool = True  # False: a checkpointer of the process's own runs hers (single-file mode)


@dataclass
class BeatResult:
    """What one batched beat did, for the event loop to log and act on (no text, only ids and counts)."""

    switches: Any = None
    life: dict[str, Any] | None = None
    writes: list[dict[str, Any]] = field(default_factory=list)
    expired_offers: int = 0
    scheduled: Any = None
    recovered: list[dict[str, Any]] = field(default_factory=list)
    job: Any = None
    vectors_waiting: bool = False
    api: Any = None
    checkpoint_mode: str | None = None  # the checkpoint due after this beat (PASSIVE, TRUNCATE), None when none is
    checkpoint: tuple[int, int, int] | None = None  # (busy, frames, copied) of the one run, when it ran here
    beat_recorded: bool = False
    errors: list[tuple[str, BaseException]] = field(default_factory=list)
    seen: tuple[int, int] | None = None  # (PRAGMA data_version, total_changes) after this beat; None: re-read all next time
    fresh: bool = True  # this beat re-read what only a write changes (switches, others' events, tokens, memory ids)
    memory_high: int = 0  # the highest memory id as of this beat
    offers_due_at: float | None = None  # when her first open offer expires as of this beat (None: none open)
    now: float = 0.0  # her clock when the beat ran
    lag_ms: float = 0.0  # how late it started against its due time
    clock_step: tuple[float, float] | None = None


@dataclass(frozen=True)
class Beat:
    """One beat's thread-side view: her connection, what she lives by, what the beat was given and what it found."""

    conn: Conn
    settings: Settings
    persona: Persona | None
    has_companion: bool
    given: BeatInput
    out: BeatResult


class BeatHost(Protocol):
    """The loop side of one companion's beat (daemon/companion_beat.CompanionBeat): what `apply` acts on."""

    log: Any
    handle: str | None

    def log_writes(self, rows: list[dict[str, Any]]) -> None: ...

    def summarise(self, mood: dict[str, Any], activity: str | None) -> None: ...

    def start_job(self, job: Any) -> None: ...

    def wake_indexer(self) -> None: ...

    def take_token_digests(self, digests: Any) -> None: ...

    def switches_read(self, switches: Switches) -> None: ...


@dataclass(frozen=True)
class BeatStep:
    """One per-beat task: `work` on her connection in the beat's transaction, `apply` on the loop after it."""

    name: str
    work: Callable[[Beat], None] | None = None
    apply: Callable[[BeatHost, BeatResult], None] | None = None
    guarded: bool = False  # several writes: run in a savepoint, so a failure half-way is rolled back alone


# -- the steps, in order -----------------------------------------------------------------------------------


def _read_switches(b: Beat) -> None:
    # A quiet beat (nothing written since the last one) skips the reads that only a write can change: a
    # thousand idle companions then cost four statements a beat less. Time-driven steps run every beat.
    b.out.switches = read_switches(b.conn) if b.out.fresh else b.given.switches


def _apply_switches(host: BeatHost, out: BeatResult) -> None:
    if out.switches is not None:
        host.switches_read(out.switches)


def _record_clock_step(b: Beat) -> None:
    if b.given.clock_step is not None:
        step_s, elapsed_s = b.given.clock_step
        log_event(b.conn, b.given.now, "clock_stepped", step_s=step_s, elapsed_s=elapsed_s)


def _read_writes(b: Beat) -> None:
    """Each write another process recorded in event_log since the last beat (all pages of them)."""
    if not b.out.fresh:
        return
    cursor = b.given.event_cursor
    while True:
        rows = oplog.writes_after(b.conn, cursor, WRITES_PAGE)
        b.out.writes.extend(rows)
        if len(rows) < WRITES_PAGE:
            return
        cursor = rows[-1]["id"]


def _apply_writes(host: BeatHost, out: BeatResult) -> None:
    host.log_writes(out.writes)


def _live(b: Beat) -> None:
    """Her life's step; a wall clock stepped far forward is a gap she did not live (issue 24), not a month in one beat."""
    given = b.given
    if not b.has_companion:
        return
    if given.clock_step is not None and given.clock_step[0] >= JUMP_IS_GAP_S:
        # One gap event, mood and energy stepped over it in closed form, her day picked up from now (a month
        # jumped in one beat used to be lived as ~500 invented activities).
        resume_after_jump(b.conn, b.settings, b.persona, given.clock_step[0], given.now)
    elif b.persona is not None:
        b.out.life = step_inner(b.conn, b.settings, b.persona, given.now, b.out.switches)


def _apply_life(host: BeatHost, out: BeatResult) -> None:
    life = out.life
    if life is None:
        return
    if life["backwards"]:
        host.log.warning("clock.backwards", part="life")
    if life["transitions"]:
        host.log.info("life.transition", activity=life["activity"], transitions=life["transitions"],
                      life_events=life["life_events"])
    host.summarise(life["mood"], life["activity"])  # the state the step just computed: no second read


def _expire_offers(b: Beat) -> None:
    """Close her share offers past their time (read again only after a write, or once the first one is due)."""
    given, out = b.given, b.out
    out.offers_due_at = given.offers_due_at
    if out.fresh or (given.offers_due_at is not None and given.now >= given.offers_due_at):
        out.expired_offers = expire_offers(b.conn, given.now)
        out.offers_due_at = next_offer_expiry(b.conn)


def _apply_offers(host: BeatHost, out: BeatResult) -> None:
    if out.expired_offers:
        host.log.info("share.expired", count=out.expired_offers)


def _schedule_jobs(b: Beat) -> None:
    """Queue a consolidation job when her sleep, the cron hour or the backlog says so (switch permitting)."""
    if b.given.jobs and b.out.switches.consolidation:
        b.out.scheduled = schedule.enqueue_due(b.conn, b.given.now, b.settings)


def _apply_schedule(host: BeatHost, out: BeatResult) -> None:
    due = out.scheduled
    if due is not None:
        host.log.debug("job.scheduled", job_id=due.job_id, kind=due.kind, trigger=due.trigger, backlog=due.backlog)


def claim_ready(conn: Conn, owner: str, now: float, lease_s: float,
                backoff_s: list[float]) -> tuple[list[dict[str, Any]], jobs.Job | None]:
    """Recover this owner's expired leases, then claim one ready job: the beat's step and the worker's poll."""
    recovered = jobs.recover_interrupted(conn, now, jobs.REASON_LEASE, backoff_s, [owner])
    return recovered, jobs.claim(conn, owner, now, lease_s, kinds=registry.kinds())


def _claim_job(b: Beat) -> None:
    given = b.given
    if given.jobs and given.claim_owner is not None:
        b.out.recovered, b.out.job = claim_ready(b.conn, given.claim_owner, given.now, given.lease_s,
                                                 list(given.backoff_s))


def log_interrupted(log: Any, items: list[dict[str, Any]], reason: str) -> None:
    """One warning per job run found interrupted (at start: REASON_RESTART; an expired lease: REASON_LEASE)."""
    for item in items:
        log.warning("job.interrupted", job_id=item["job_id"], kind=item["kind"], attempt=item["attempt"],
                    since=item["since"], reason=reason, next=item["status"])


def _apply_jobs(host: BeatHost, out: BeatResult) -> None:
    log_interrupted(host.log, out.recovered, jobs.REASON_LEASE)
    if out.job is not None:
        host.log.info("job.claimed", job_id=out.job.id, kind=out.job.kind, attempt=out.job.attempts)
        host.start_job(out.job)


def _look_for_vectors(b: Beat) -> None:
    given, out = b.given, b.out
    out.memory_high = given.memory_high  # kept when the read below fails
    if out.fresh:
        out.memory_high = int(memory_store.max_memory_id(b.conn))
    out.vectors_waiting = out.memory_high > given.indexed_upto  # re-woken every beat while so


def _apply_vectors(host: BeatHost, out: BeatResult) -> None:
    if out.vectors_waiting:
        host.wake_indexer()


def _read_tokens(b: Beat) -> None:
    """Her token digests, so `anima token` on a running daemon takes effect within one beat."""
    if b.given.api_step is not None and b.out.fresh:
        b.out.api = b.given.api_step(b.conn)


def _apply_tokens(host: BeatHost, out: BeatResult) -> None:
    if out.api is not None:
        host.take_token_digests(out.api)


def _record_beat(b: Beat) -> None:
    daemon_beat(b.conn, b.given.now, b.given.wall, b.given.lag_ms)
    b.out.beat_recorded = True


STEPS: tuple[BeatStep, ...] = (
    BeatStep("switches", _read_switches, _apply_switches),  # first: every later step obeys this beat's values
    BeatStep("clock", _record_clock_step),
    BeatStep("oplog", _read_writes, _apply_writes),
    BeatStep("life", _live, _apply_life, guarded=True),
    BeatStep("share", _expire_offers, _apply_offers),
    BeatStep("schedule", _schedule_jobs, _apply_schedule, guarded=True),
    BeatStep("jobs", _claim_job, _apply_jobs, guarded=True),
    BeatStep("memory", _look_for_vectors, _apply_vectors),
    BeatStep("api", _read_tokens, _apply_tokens),
    BeatStep("beat", _record_beat),  # last in the transaction: a beat on file means the steps above ran
)


# -- running the list ---------------------------------------------------------------------------------------


def beat_on(conn: Conn, settings: Settings, persona: Persona | None, has_companion: bool, beat: BeatInput,
            on_lane: bool) -> BeatResult:
    """`beat_batch` on her own thread, or on the host's beat lane (daemon/beat_lane.py), where nothing may wait.

    On the lane, her write lock is taken without the busy timeout: when another process holds it (an
    `anima` command writing her file), the beat is handed back (Deferred) to wait on her own thread,
    and a due checkpoint (an fsync) is left out of the beat: it runs after the lane's group
    (daemon/companion_beat.CompanionBeat._checkpoint_after).
    """
    if not on_lane:
        return _timed(beat_batch(conn, settings, persona, has_companion, beat), beat)
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        result = beat_batch(conn, settings, persona, has_companion, dataclasses.replace(beat, checkpoint_here=False))
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if result.switches is None and any(_busy(exc) for _, exc in result.errors):
        raise Deferred(f"{beat.db_path} is locked by another writer")
    return _timed(result, beat)


def _timed(result: BeatResult, beat: BeatInput) -> BeatResult:
    result.now, result.lag_ms, result.clock_step = beat.now, beat.lag_ms, beat.clock_step
    return result


def _busy(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and int(code) & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)


def beat_batch(conn: Conn, settings: Settings, persona: Persona | None, has_companion: bool,
               beat: BeatInput) -> BeatResult:
    """`STEPS` on her connection in ONE write transaction, each step's failure its own; the checkpoint after the commit.

    A commit that fails (a full disk) lands nothing, so nothing it claimed is acted on.
    """
    out = BeatResult()
    fault_path = Path(beat.db_path)

    def failed(step: str, exc: Exception) -> None:
        out.errors.append((step, store_fault(exc, fault_path) or exc))

    try:
        conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:
        failed("beat", exc)
        return out
    try:
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        out.fresh = beat.seen is None or beat.seen != (version, conn.total_changes) or beat.switches is None
        b = Beat(conn, settings, persona, has_companion, beat, out)
        for step in STEPS:
            if step.work is None:
                continue
            _run_step(conn, step, b, failed)
            if out.switches is None:  # her switches unread: no step may run without knowing them
                break
        conn.execute("COMMIT")
        out.seen = None if out.errors else (version, conn.total_changes)
    except Exception as exc:
        with contextlib.suppress(Exception):
            conn.execute("ROLLBACK")
        return BeatResult(switches=out.switches, errors=[*out.errors, ("beat", store_fault(exc, fault_path) or exc)])
    if beat.checkpoints:
        try:
            out.checkpoint_mode = checkpoint_mode(f"{beat.db_path}-wal", beat.checkpoint)
            if out.checkpoint_mode is not None and beat.checkpoint_here:
                out.checkpoint = run_checkpoint(conn, out.checkpoint_mode)
        except Exception as exc:
            failed("checkpoint", exc)
    return out


def _run_step(conn: Conn, step: BeatStep, b: Beat, failed: Callable[[str, Exception], None]) -> None:
    assert step.work is not None
    if not step.guarded:  # a read or a single statement: nothing to undo when it fails
        try:
            step.work(b)
        except Exception as exc:  # one failing step must not stop her heart (nor the other steps)
            failed(step.name, exc)
        return
    conn.execute("SAVEPOINT beat_step")
    try:
        step.work(b)
    except Exception as exc:  # one failing step must not stop her heart (nor the other steps)
        conn.execute("ROLLBACK TO beat_step")
        conn.execute("RELEASE beat_step")
        failed(step.name, exc)
        return
    conn.execute("RELEASE beat_step")


def apply_beat(host: BeatHost, result: BeatResult) -> None:
    """Each step's loop side, in order, after the errors are logged (no DB work here)."""
    for step_name, exc in result.errors:
        if not isinstance(exc, StorageFullError):
            host.log.error("component.failed", component=step_name, error=type(exc).__name__, detail=str(exc)[:200])
    for step in STEPS:
        if step.apply is not None:
            step.apply(host, result)


def checkpoint_mode(wal_path: str, due: bool) -> str | None:
    """PASSIVE every few beats (`due`); TRUNCATE once the WAL is past its bound (daemon/checkpoint.py says why).

    On the companion's own connection: a thousand checkpointer threads with a 1 s watcher each would
    cost more than the companions' beats together.
    """
    try:
        size = os.stat(wal_path).st_size
    except FileNotFoundError:
        size = 0
    if size > WAL_SOFT_LIMIT_BYTES:
        return "TRUNCATE"
    return "PASSIVE" if due else None


def run_checkpoint(conn: Conn, mode: str) -> tuple[int, int, int]:
    busy, frames, copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    return int(busy), int(frames), int(copied)


def checkpoint_on(mode: str, conn: Conn, on_lane: bool) -> tuple[int, int, int]:
    """A checkpoint her beat left due, as a beat lane's work (daemon/beat_lane.LaneBeat).

    A PASSIVE one waits for nobody. A TRUNCATE one waits for readers and writers (the busy timeout),
    which the beat lane must not: there it tries without waiting, and when someone holds her file
    it is handed back (Deferred) to wait on her own thread.
    """
    if not on_lane or mode == "PASSIVE":
        return run_checkpoint(conn, mode)
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        outcome = run_checkpoint(conn, mode)
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if outcome[0]:
        raise Deferred("a reader or writer holds her WAL")
    return outcome


def beat_failed(out: BeatResult, step: str) -> bool:
    return any(name == step for name, _ in out.errors)
