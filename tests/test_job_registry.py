"""Jobs dispatch through one registry and one runner; scheduling is one module on her local time ([life] tz)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine import jobs
from engine.consolidate.run import JOB_KIND
from engine.jobs import registry, runner, schedule
from engine.memory.ingest import TurnInput, record_turn
from engine.settings import ConsolidationSettings, LifeSettings, Settings
from engine.store.core import set_control
from tests.memory_helpers import embedder, fresh_db

T0 = 1_785_000_000.0  # 2026-07-25 17:20 UTC = 01:20 Asia/Shanghai
HOUR = 3600.0


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    c = fresh_db(tmp_path / "registry.db")
    yield c
    c.close()


def test_the_registry_knows_consolidation_and_maintenance_and_names_the_known_kinds_for_an_unknown_one() -> None:
    assert registry.kinds() == sorted([JOB_KIND, "integrity_check", "replica_verify", "snapshot", "trace_retention"])
    assert registry.handler_for(JOB_KIND) is registry.HANDLERS[JOB_KIND]
    with pytest.raises(registry.UnknownJobKindError, match=r"'reindex'.*consolidate"):
        registry.handler_for("reindex")


def test_a_job_of_an_unknown_kind_is_a_recorded_failed_attempt_not_a_crash(conn: Any) -> None:
    job_id = jobs.enqueue(conn, "reindex", None, T0, max_attempts=2)
    job = jobs.claim(conn, "w", T0, 60, job_id=job_id)
    result = runner.run(conn, job, registry.JobRuntime(Settings(), None), lambda: T0 + 1, [30.0])
    assert isinstance(result.error, registry.UnknownJobKindError) and result.status == "queued"
    row = jobs.get_job(conn, job_id)
    assert row["status"] == "queued" and row["run_after"] == T0 + 31 and "no handler" in row["error"]


def test_the_runner_dispatches_through_the_registry_and_finishes_the_job(conn: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, float]] = []

    def handler(c: Any, job: jobs.Job, runtime: registry.JobRuntime, now: float) -> dict[str, Any]:
        seen.append((job.id, now))
        with jobs.job_transaction(c, job, now) as out:
            out.result = {"ok": True}
        return {"ok": True}

    monkeypatch.setattr(registry, "HANDLERS", {"probe": handler})
    job_id = jobs.enqueue(conn, "probe", None, T0)
    job = jobs.claim(conn, "w", T0, 60)
    result = runner.run(conn, job, registry.JobRuntime(Settings(), None), lambda: T0 + 2, [30.0])
    assert result == runner.RunResult(job_id, "probe", 1, "done", {"ok": True})
    assert seen == [(job_id, T0 + 2)] and jobs.get_job(conn, job_id)["result"] == {"ok": True}


def _with_backlog(conn: Any) -> None:
    record_turn(conn, embedder(), TurnInput("t1", "我住在上海徐汇", "嗯。", "2026-07-22T22:00:00+08:00"), T0)


def _settings(tz: str, cron_hour: int) -> Settings:
    return replace(Settings(), life=LifeSettings(tz=tz),
                   consolidation=ConsolidationSettings(cron_hour=cron_hour, min_new_episodes=50))


def test_the_cron_hour_is_the_calendars_and_the_beat_leaves_it_alone(conn: Any) -> None:
    _with_backlog(conn)
    at_three_in_shanghai = T0 + 2 * HOUR  # 19:20 UTC
    assert schedule.her_local_hour(at_three_in_shanghai, "Asia/Shanghai") == 3
    # A beat at her cron hour queues nothing: the hour is the calendar's (daemon/scheduler.py, in her zone).
    assert schedule.enqueue_due(conn, at_three_in_shanghai, _settings("Asia/Shanghai", 3)) is None
    due = schedule.enqueue_due(conn, at_three_in_shanghai, _settings("Asia/Shanghai", 3), at_cron=True)
    assert due is not None and (due.kind, due.trigger, due.backlog) == (JOB_KIND, "cron", 2)
    assert jobs.get_job(conn, due.job_id)["payload"] == {"trigger": "cron"}
    # Fired again: the open job is reused, not doubled.
    again = schedule.enqueue_calendar(conn, JOB_KIND, at_three_in_shanghai + 15, _settings("Asia/Shanghai", 3))
    assert again == due.job_id and len(jobs.list_jobs(conn)) == 1


def test_a_calendar_firing_obeys_her_consolidation_switch(conn: Any) -> None:
    _with_backlog(conn)
    set_control(conn, "consolidation", False, T0, actor="test")
    assert schedule.enqueue_calendar(conn, JOB_KIND, T0, _settings("UTC", 3)) is None
    assert schedule.enqueue_calendar(conn, "snapshot", T0, _settings("UTC", 3)) is not None
    assert [j["kind"] for j in jobs.list_jobs(conn)] == ["snapshot"]


def test_nothing_is_due_without_a_backlog(conn: Any) -> None:
    assert schedule.enqueue_due(conn, T0 + 2 * HOUR, _settings("Asia/Shanghai", 3)) is None
    assert jobs.list_jobs(conn) == []
