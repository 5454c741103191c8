"""One heartbeat: single-file mode and a directory host run the same list of steps (daemon/beat.STEPS).

Real parts: a real SQLite file per companion, the real Daemon and Host with a FakeClock. A step added
to the one list runs in both modes (its work on her connection inside the beat's transaction, its
apply on the event loop); a step that fails is rolled back alone in single-file mode too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from daemon import beat
from daemon.beat import Beat, BeatHost, BeatResult, BeatStep
from daemon.clock import FakeClock
from engine.store import connect
from engine.store.core import daemon_state, log_event
from tests.api_support import T0, running_daemon
from tests.test_host import advance, served


class Witness:
    """A step of its own: writes an event in the beat's transaction, and notes where each half ran."""

    def __init__(self) -> None:
        self.work_threads: list[str] = []
        self.in_transaction: list[bool] = []
        self.applied: list[float] = []

    def work(self, b: Beat) -> None:
        self.work_threads.append(threading.current_thread().name)
        self.in_transaction.append(b.conn.in_transaction)
        log_event(b.conn, b.given.now, "witness")

    def apply(self, host: BeatHost, out: BeatResult) -> None:
        self.applied.append(out.now)


def _events(db: Path, kind: str) -> int:
    conn = connect(db, readonly=True)
    try:
        return int(conn.execute("SELECT count(*) FROM event_log WHERE kind = ?", (kind,)).fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def witness(monkeypatch: pytest.MonkeyPatch) -> Witness:
    seen = Witness()
    steps = (*beat.STEPS[:-1], BeatStep("witness", seen.work, seen.apply), beat.STEPS[-1])
    monkeypatch.setattr(beat, "STEPS", steps)
    return seen


def test_the_list_is_ordered_switches_first_and_the_beat_record_last() -> None:
    names = [step.name for step in beat.STEPS]
    assert names[0] == "switches" and names[-1] == "beat"
    assert len(set(names)) == len(names)
    assert names.index("life") < names.index("schedule") < names.index("jobs")


async def test_a_step_added_to_the_list_runs_in_single_file_mode(tmp_path: Path, witness: Witness) -> None:
    db = tmp_path / "her.db"
    clock = FakeClock(T0)
    async with running_daemon(db, clock) as (daemon, _log):
        for _ in range(2):
            clock.advance(15)
            await daemon.heartbeat()
    assert len(witness.applied) == 2 and witness.applied[-1] == T0 + 30
    assert all(witness.in_transaction)  # inside the beat's one write transaction
    assert threading.main_thread().name not in witness.work_threads  # on a DB thread, never the event loop
    assert _events(db, "witness") == 2


async def test_a_step_added_to_the_list_runs_for_each_companion_of_a_host(tmp_path: Path, witness: Witness) -> None:
    async with served(tmp_path, "a1", "b2", interval_s=5.0, watch_s=0.0) as (host, clock):
        await advance(host, clock, 5.5)
    assert len(witness.applied) == 2 and all(witness.in_transaction)
    assert _events(tmp_path / "a1.db", "witness") == 1 and _events(tmp_path / "b2.db", "witness") == 1


async def test_a_failing_step_in_single_file_mode_is_rolled_back_alone_and_the_beat_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(b: Beat) -> None:
        log_event(b.conn, b.given.now, "half_written")
        raise RuntimeError("this step fails half-way")

    steps = tuple(BeatStep("life", broken, guarded=True) if s.name == "life" else s for s in beat.STEPS)
    monkeypatch.setattr(beat, "STEPS", steps)
    db = tmp_path / "her.db"
    clock = FakeClock(T0)
    async with running_daemon(db, clock) as (daemon, log):
        clock.advance(15)
        await daemon.heartbeat()
        failed = log.named("component.failed")
    assert [kw["component"] for kw in failed] == ["life"]
    assert _events(db, "half_written") == 0  # its savepoint rolled back
    conn = connect(db, readonly=True)
    try:
        state: Any = daemon_state(conn)
        assert state["beats"] == 1 and state["last_beat_at"] == T0 + 15  # the others landed with the beat record
    finally:
        conn.close()
