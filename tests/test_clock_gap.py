"""A forward wall-clock jump while she runs is a gap, not invented life (issue 24 item 8): one gap event, her day
picked up from the new now, no activities or life events for the time she did not live."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from daemon.app import Daemon
from daemon.clock import FakeClock
from engine.settings import HeartbeatSettings, Settings
from engine.store import connect
from tests.api_support import T0, RecordingLog

DAY = 86400.0


def _count(db: Path, sql: str) -> int:
    conn = connect(db)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def _gaps(db: Path) -> list[dict[str, Any]]:
    conn = connect(db)
    try:
        return [json.loads(r[0]) for r in conn.execute("SELECT detail_json FROM event_log WHERE kind = 'gap'")]
    finally:
        conn.close()


async def _started(daemon: Daemon) -> asyncio.Task[int]:
    task = asyncio.create_task(daemon.run())
    for _ in range(2000):
        if daemon.beat_task is not None or task.done():
            break
        await asyncio.sleep(0.005)
    assert not task.done(), task.result()
    return task


async def _run(tmp_path: Path, jump_s: float) -> tuple[Path, int, int]:
    """Beat a while, jump the wall clock forward by jump_s, beat once; (db, events before, events after)."""
    db = tmp_path / "her.db"
    clock = FakeClock(T0)
    daemon = Daemon(Settings(heartbeat=HeartbeatSettings(interval_s=3600)), db, clock, None,
                    components=["daemon.life_component:build"])
    daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        for _ in range(4):
            clock.advance(900)
            await daemon.heartbeat()
        before = _count(db, "SELECT count(*) FROM activity")
        clock.advance(15)
        clock.step(jump_s)
        await daemon.heartbeat()
        after = _count(db, "SELECT count(*) FROM activity")
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0
    return db, before, after


async def test_a_month_jumped_in_one_beat_is_one_gap_and_no_invented_life(tmp_path: Path) -> None:
    db, before, after = await _run(tmp_path, 30 * DAY)
    assert after - before <= 1                     # her day picked up from now: one new activity at most
    jumps = [g for g in _gaps(db) if g.get("cause") == "clock_step"]
    assert len(jumps) == 1 and jumps[0]["seconds"] == 30 * DAY
    assert _count(db, "SELECT count(*) FROM activity WHERE detail_json LIKE '%\"ended_by\": \"gap\"%'") == 1


async def test_a_small_step_is_lived_through_as_before(tmp_path: Path) -> None:
    db, _, _ = await _run(tmp_path, 120.0)
    assert [g for g in _gaps(db) if g.get("cause") == "clock_step"] == []


def test_a_host_beat_after_a_forward_jump_resumes_her_instead_of_living_it(tmp_path: Path) -> None:
    """The many-companions host batches a beat in daemon/runtime.py: the same rule there."""
    from daemon.beat import BeatInput, beat_batch
    from engine.companion import create_companion
    from engine.inner import resume_after_gap
    from engine.persona import persona_of_companion
    from engine.store import migrate
    from engine.store.core import get_companion

    db = tmp_path / "her.db"
    conn = connect(db)
    try:
        migrate(conn, now=T0)
        create_companion(conn, name="小安", birth_local="1990-08-15 08:30", tz="Asia/Shanghai", place=None, sect=2,
                         now=T0)
        persona = persona_of_companion(get_companion(conn))
        settings = Settings()
        resume_after_gap(conn, settings, persona, None, T0)

        def beat(now: float, step: tuple[float, float] | None) -> None:
            result = beat_batch(conn, settings, persona, True, BeatInput(
                now=now, wall=now, lag_ms=0.0, event_cursor=0, indexed_upto=0, jobs=False, claim_owner=None,
                lease_s=60.0, backoff_s=(30.0,), db_path=str(db), api_step=None, checkpoint=False, clock_step=step))
            assert result.errors == []

        beat(T0 + 15, None)
        before = int(conn.execute("SELECT count(*) FROM activity").fetchone()[0])
        beat(T0 + 30 + 30 * DAY, (30 * DAY, 15.0))
        after = int(conn.execute("SELECT count(*) FROM activity").fetchone()[0])
        gaps = [json.loads(r[0]) for r in conn.execute("SELECT detail_json FROM event_log WHERE kind = 'gap'")]
    finally:
        conn.close()
    assert after - before <= 1
    assert [g["cause"] for g in gaps] == ["clock_step"]
