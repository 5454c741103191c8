"""The calendar (daemon/scheduler.py, apscheduler) under a stepped wall clock: the heartbeat goes on, each job fires once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from daemon.app import Daemon
from daemon.clock import FakeClock
from daemon.scheduler import calendar_triggers
from engine.consolidate.run import JOB_KIND as CONSOLIDATE
from engine.jobs import maintenance
from engine.settings import (
    ConsolidationSettings,
    HeartbeatSettings,
    LifeSettings,
    MaintenanceSettings,
    Settings,
)
from engine.store import connect
from tests.api_support import RecordingLog

DAY = 86400.0
HOUR = 3600.0
D0_0200 = datetime(2026, 6, 10, 2, 0, tzinfo=UTC).timestamp()  # 02:00 in her zone (UTC here)
KINDS = [CONSOLIDATE, maintenance.RETENTION, maintenance.SNAPSHOT, maintenance.INTEGRITY]


def _settings(grace_s: float = 6 * HOUR) -> Settings:
    """Every calendar job once a night between 03:00 and 03:45 of her day."""
    return Settings(heartbeat=HeartbeatSettings(interval_s=3600), life=LifeSettings(tz="UTC"),
                    consolidation=ConsolidationSettings(cron_hour=3),
                    maintenance=MaintenanceSettings(retention_cron="15 3 * * *", snapshot_cron="30 3 * * *",
                                                    integrity_cron="45 3 * * *", misfire_grace_s=grace_s))


def _queued(db: Path) -> dict[str, int]:
    conn = connect(db)
    try:
        return {str(k): int(n) for k, n in conn.execute("SELECT kind, count(*) FROM job GROUP BY kind")}
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


async def _beats(daemon: Daemon, clock: FakeClock, hours: float, every_s: float = 900.0) -> None:
    """Real time passes in beats of `every_s`; each beat nudges the calendar, then its firings finish."""
    assert daemon.calendar is not None
    for _ in range(int(hours * HOUR / every_s)):
        clock.advance(every_s)
        await daemon.heartbeat()
        await daemon.calendar.settled()


async def test_a_wall_clock_stepped_back_and_forward_a_day_keeps_the_beat_and_fires_each_job_once(
        tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    clock = FakeClock(D0_0200)
    daemon = Daemon(_settings(), db, clock, None, components=[])  # the beat loop's own timer never fires here
    log = daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        calendar = daemon.calendar
        assert calendar is not None
        assert calendar.next_fire(maintenance.SNAPSHOT) == datetime(2026, 6, 10, 3, 30, tzinfo=UTC)
        await _beats(daemon, clock, 0.5)  # 02:30
        clock.step(-DAY)  # 02:30 the day before: her 03:00-03:45 comes round again
        await _beats(daemon, clock, 2)  # to 04:30 of the day before
        assert sum(calendar.fired.values()) == 0  # already scheduled for the 10th: nothing fires twice
        clock.step(DAY)  # 04:30 on the 10th: every job is due, 45-90 min late, inside the grace
        await _beats(daemon, clock, 3)  # to 07:30
        assert dict(calendar.fired) == dict.fromkeys(KINDS, 1)
        assert sum(calendar.missed.values()) == 0
        assert daemon.beats == 2 + 8 + 12  # the heartbeat went on through both steps
        assert daemon.clock_steps == 2
        assert calendar.next_fire(maintenance.SNAPSHOT) == datetime(2026, 6, 11, 3, 30, tzinfo=UTC)
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0
    # Each firing is a leased job row; consolidation found no backlog, so it queued nothing.
    assert _queued(db) == {maintenance.SNAPSHOT: 1, maintenance.INTEGRITY: 1, maintenance.RETENTION: 1}
    assert [e["kind"] for e in log.named("calendar.fired")] == KINDS


async def test_firings_missed_past_the_grace_are_skipped_and_the_next_night_fires_once(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    clock = FakeClock(D0_0200)
    daemon = Daemon(_settings(grace_s=HOUR), db, clock, None, components=[])
    daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        calendar = daemon.calendar
        assert calendar is not None
        clock.step(2 * DAY)  # two nights jump by: their firings coalesce into one, 23 h late, past the grace
        await _beats(daemon, clock, 0.25)
        assert sum(calendar.fired.values()) == 0
        assert dict(calendar.missed) == dict.fromkeys(KINDS, 1)
        await _beats(daemon, clock, 2)  # through 03:00-03:45 of the 12th
        assert dict(calendar.fired) == dict.fromkeys(KINDS, 1)
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0


def test_the_calendar_runs_in_her_zone_and_an_empty_line_turns_a_job_off() -> None:
    settings = Settings(life=LifeSettings(tz="Asia/Shanghai"), consolidation=ConsolidationSettings(cron_hour=3),
                        maintenance=MaintenanceSettings(integrity_cron=""))
    triggers = calendar_triggers(settings)
    assert sorted(triggers) == sorted([CONSOLIDATE, maintenance.SNAPSHOT, maintenance.RETENTION, maintenance.REPLICA_VERIFY])
    after = datetime(2026, 6, 10, 0, 0, tzinfo=UTC)
    at: Any = triggers[CONSOLIDATE].get_next_fire_time(None, after)
    assert at.astimezone(UTC) == datetime(2026, 6, 10, 19, 0, tzinfo=UTC)  # 03:00 in Shanghai


async def test_a_host_has_one_calendar_whose_firing_queues_the_job_in_every_companion(tmp_path: Path) -> None:
    from tests.test_host import advance, served

    # T0 is 04:26:40 in her zone (Asia/Shanghai): the default nightly snapshot is due at 04:30.
    async with served(tmp_path, "a1", "b2", "c3") as (host, clock):
        assert host.calendar is not None
        await advance(host, clock, 300, step=30)
        await host.calendar.settled()
        assert dict(host.calendar.fired) == {maintenance.SNAPSHOT: 1}
        assert [e["queued"] for e in host.log.named("calendar.fired")] == [3]
    for handle in ("a1", "b2", "c3"):
        assert _queued(tmp_path / f"{handle}.db") == {maintenance.SNAPSHOT: 1}


def test_a_bad_crontab_line_is_a_one_line_config_error_naming_the_key() -> None:
    import pytest

    from engine.errors import ConfigError
    from engine.settings import parse_settings

    with pytest.raises(ConfigError, match=r'\[maintenance\] snapshot_cron must be a crontab line .* got .61 4 \* \* \*.'):
        parse_settings('[maintenance]\nsnapshot_cron = "61 4 * * *"\n')
    assert parse_settings('[maintenance]\nintegrity_cron = ""\n').maintenance.integrity_cron == ""
