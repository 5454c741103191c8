"""The worker part in-process: scheduling rules, restart recovery, claim -> run -> done, and the on/off switch."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from daemon.clock import FakeClock
from daemon.companion_beat import CompanionBeat
from daemon.component import DaemonContext
from daemon.db import AsyncStore
from daemon.worker import build
from engine import jobs
from engine.consolidate.run import JOB_KIND
from engine.jobs.schedule import should_schedule
from engine.memory.ingest import TurnInput, record_turn
from engine.settings import ConsolidationSettings, JobSettings, Settings
from engine.store.core import set_control
from tests.memory_helpers import embedder, fresh_db

T0 = 1_785_000_000.0  # 2026-07-25 ~17:20 UTC = 01:20 Asia/Shanghai
HOUR = 3600.0


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def _add(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    info = warning = error = debug = _add

    def names(self) -> list[str]:
        return [e for e, _ in self.events]


def test_backlog_over_the_threshold_schedules() -> None:
    assert should_schedule(now=T0, tz="Asia/Shanghai", cron_hour=3, last_done=None, activity=None, backlog=51,
                           min_new_episodes=50) == "backlog"
    assert should_schedule(now=T0, tz="Asia/Shanghai", cron_hour=3, last_done=None, activity=None, backlog=50,
                           min_new_episodes=50) is None


def test_cron_hour_is_her_local_time_and_runs_once_a_night() -> None:
    two_hours_later = T0 + 2 * HOUR  # 03:20 in Shanghai
    assert should_schedule(now=two_hours_later, tz="Asia/Shanghai", cron_hour=3, last_done=None, activity=None,
                           backlog=5, min_new_episodes=50) == "cron"
    assert should_schedule(now=two_hours_later, tz="UTC", cron_hour=3, last_done=None, activity=None, backlog=5,
                           min_new_episodes=50) is None
    assert should_schedule(now=two_hours_later, tz="Asia/Shanghai", cron_hour=3, last_done=two_hours_later - 600,
                           activity=None, backlog=5, min_new_episodes=50) is None


def test_with_an_inner_life_it_runs_once_per_main_sleep_instead_of_the_cron() -> None:
    asleep = {"kind": "sleep", "started_at": T0}
    assert should_schedule(now=T0 + HOUR, tz="UTC", cron_hour=3, last_done=T0 - 20 * HOUR, activity=asleep,
                           backlog=5, min_new_episodes=50) == "sleep"
    assert should_schedule(now=T0 + HOUR, tz="UTC", cron_hour=3, last_done=T0 + 600, activity=asleep, backlog=5,
                           min_new_episodes=50) is None
    awake = {"kind": "read", "started_at": T0}
    at_cron = T0 + 2 * HOUR
    assert should_schedule(now=at_cron, tz="Asia/Shanghai", cron_hour=3, last_done=None, activity=awake, backlog=5,
                           min_new_episodes=50) is None


def test_nothing_to_do_and_recent_failure_schedule_nothing() -> None:
    assert should_schedule(now=T0, tz="UTC", cron_hour=0, last_done=None, activity={"kind": "sleep", "started_at": 0},
                           backlog=0, min_new_episodes=50) is None
    assert should_schedule(now=T0, tz="UTC", cron_hour=0, last_done=None, activity=None, backlog=500,
                           min_new_episodes=50, last_failed=T0 - 60) is None


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "worker.db"
    conn = fresh_db(path)
    for n, (text, day) in enumerate([("我住在上海徐汇", 16), ("我搬到了闵行", 22)]):
        record_turn(conn, embedder(), TurnInput(f"t{n}", text, "嗯。", f"2026-07-{day}T22:00:00+08:00"), T0)
    conn.close()
    return path


async def context(db: Path, **consolidation: Any) -> DaemonContext:
    settings = replace(Settings(), jobs=JobSettings(poll_s=0.05, lease_s=30.0, backoff_s=[0.0]),
                       consolidation=ConsolidationSettings(min_new_episodes=0, **consolidation))
    store = await AsyncStore(db).open()
    return DaemonContext(settings=settings, db_path=db, clock=FakeClock(T0), store=store, log=Log())


async def wait_done(ctx: DaemonContext, job_id: int, timeout: float = 30) -> dict[str, Any]:
    for _ in range(int(timeout / 0.05)):
        row = await ctx.store.call(jobs.get_job, job_id)
        if row["status"] in ("done", "failed"):
            return row
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {job_id} not finished")


async def test_start_recovers_a_crashed_run_then_retries_it_to_done(db: Path) -> None:
    ctx = await context(db)
    job_id = await ctx.store.call(jobs.enqueue, JOB_KIND, {"trigger": "test"}, T0 - 100)
    await ctx.store.call(jobs.claim, "dead-process", T0 - 90, 60)
    worker = build(ctx)
    await worker.start(ctx)
    try:
        row = await wait_done(ctx, job_id)
    finally:
        await worker.stop(ctx)
    assert row["status"] == "done" and row["attempts"] == 2 and row["result"]["superseded"] == 1
    names = ctx.log.names()
    assert names.index("job.interrupted") < names.index("job.claimed") < names.index("job.done")
    interrupted = dict(ctx.log.events)["job.interrupted"]
    assert interrupted["reason"] == "process restart" and interrupted["attempt"] == 1
    events = [e["event"] for e in await ctx.store.call(jobs.job_events, job_id)]
    assert events == ["queued", "claimed", "interrupted", "retried", "claimed", "done"]
    await ctx.store.close()


async def test_the_worker_schedules_on_backlog_and_respects_the_switch(db: Path) -> None:
    """Her beat's schedule and jobs steps (daemon/beat.py) queue the job, the worker runs it; the switch is read from her file."""
    ctx = await context(db)
    await ctx.store.call(set_control, "consolidation", False, T0)
    worker = build(ctx)
    await worker.start(ctx)
    heart = CompanionBeat(ctx, ctx.log, handle=None, worker=lambda: ctx.worker, api=lambda: None)
    try:
        await heart.beat(ctx.clock.monotonic())
        await asyncio.sleep(0.2)
        assert await ctx.store.call(jobs.list_jobs) == []
        await ctx.store.call(set_control, "consolidation", True, T0)
        ctx.clock.advance(15)
        await heart.beat(ctx.clock.monotonic())
        (job,) = await ctx.store.call(jobs.list_jobs)
        row = await wait_done(ctx, job["id"])
    finally:
        await worker.stop(ctx)
    assert row["payload"] == {"trigger": "backlog"} and row["status"] == "done"
    assert "job.done" in ctx.log.names()
    await ctx.store.close()


async def test_a_failing_job_is_retried_with_backoff_and_logged(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.jobs import registry

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(registry, "consolidate_once", broken)
    ctx = await context(db)
    ctx.settings = replace(ctx.settings, jobs=JobSettings(poll_s=0.05, backoff_s=[3600.0], max_attempts=3))
    job_id = await ctx.store.call(jobs.enqueue, JOB_KIND, {}, T0, max_attempts=3)
    worker = build(ctx)
    await worker.start(ctx)
    try:
        for _ in range(200):
            row = await ctx.store.call(jobs.get_job, job_id)
            if row["status"] == "queued" and row["attempts"] == 1:
                break
            await asyncio.sleep(0.05)
    finally:
        await worker.stop(ctx)
    assert row["status"] == "queued" and row["run_after"] == T0 + 3600 and "disk on fire" in row["error"]
    assert "job.failed" in ctx.log.names()
    await ctx.store.close()


def test_backlog_waits_while_she_is_chatting() -> None:
    chatting = {"kind": "chat", "started_at": T0 - 60}
    assert should_schedule(now=T0, tz="UTC", cron_hour=3, last_done=None, activity=chatting, backlog=500,
                           min_new_episodes=50) is None
    reading = {"kind": "read", "started_at": T0 - 60}
    assert should_schedule(now=T0, tz="UTC", cron_hour=3, last_done=None, activity=reading, backlog=500,
                           min_new_episodes=50) == "backlog"
