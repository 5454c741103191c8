"""Leased jobs: claim is atomic, writes commit with `done`, failures back off, a crashed run is queued again
with an `interrupted` event."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import jobs
from engine.errors import ConflictError, InputError
from engine.store import connect, migrate

BACKOFF = [30.0, 60.0, 300.0, 900.0, 3600.0]
T0 = 1_780_000_000.0


@pytest.fixture
def conn(tmp_path: Path):
    c = connect(tmp_path / "jobs.db")
    migrate(c, now=0)
    yield c
    c.close()


def events(conn, job_id: int) -> list[str]:
    return [e["event"] for e in jobs.job_events(conn, job_id)]


@given(st.integers(min_value=1, max_value=50))
def test_backoff_follows_the_schedule_and_repeats_its_last_step(attempt: int) -> None:
    expected = BACKOFF[min(attempt, len(BACKOFF)) - 1]
    assert jobs.backoff_delay(attempt, BACKOFF) == expected


@given(st.integers(min_value=1, max_value=10), st.integers(min_value=1, max_value=10))
def test_after_failure_gives_up_exactly_at_max_attempts(attempts: int, max_attempts: int) -> None:
    verdict, run_after = jobs.after_failure(attempts, max_attempts, T0, BACKOFF)
    assert verdict == ("failed" if attempts >= max_attempts else "queued")
    if verdict == "queued":
        assert run_after == T0 + jobs.backoff_delay(attempts, BACKOFF)


def test_enqueue_reuses_an_open_job_of_the_same_kind(conn) -> None:
    first = jobs.enqueue(conn, "consolidate", {"trigger": "cron"}, T0)
    assert jobs.enqueue(conn, "consolidate", {"trigger": "backlog"}, T0 + 1) == first
    assert jobs.enqueue(conn, "other", None, T0) != first
    assert events(conn, first) == ["queued"]


def test_claim_takes_one_ready_job_once_and_not_before_run_after(conn) -> None:
    later = jobs.enqueue(conn, "a", None, T0, run_after=T0 + 100, unique=False)
    ready = jobs.enqueue(conn, "a", None, T0, unique=False)
    job = jobs.claim(conn, "w1", T0, 60)
    assert job is not None and job.id == ready and job.attempts == 1 and job.lease_until == T0 + 60
    assert jobs.claim(conn, "w2", T0, 60) is None  # `later` is not due, `ready` is taken
    assert jobs.claim(conn, "w2", T0 + 100, 60).id == later
    assert events(conn, ready) == ["queued", "claimed"]


def test_claim_filters_by_kind_and_id(conn) -> None:
    a = jobs.enqueue(conn, "a", None, T0)
    b = jobs.enqueue(conn, "b", None, T0)
    assert jobs.claim(conn, "w", T0, 60, kinds=["b"]).id == b
    assert jobs.claim(conn, "w", T0, 60, kinds=["b"]) is None
    assert jobs.claim(conn, "w", T0, 60, job_id=a).id == a


def test_job_writes_and_done_commit_together(conn) -> None:
    job_id = jobs.enqueue(conn, "a", None, T0)
    job = jobs.claim(conn, "w", T0, 60)
    conn.execute("CREATE TABLE effect (x)")
    with jobs.job_transaction(conn, job, T0 + 1) as out:
        conn.execute("INSERT INTO effect VALUES (1)")
        out.result = {"rows": 1}
    row = jobs.get_job(conn, job_id)
    assert row["status"] == "done" and row["result"] == {"rows": 1} and row["finished_at"] == T0 + 1
    assert conn.execute("SELECT count(*) FROM effect").fetchone()[0] == 1


def test_a_failing_handler_leaves_no_writes_and_the_job_running(conn) -> None:
    job_id = jobs.enqueue(conn, "a", None, T0)
    job = jobs.claim(conn, "w", T0, 60)
    conn.execute("CREATE TABLE effect (x)")
    with pytest.raises(RuntimeError), jobs.job_transaction(conn, job, T0 + 1):
        conn.execute("INSERT INTO effect VALUES (1)")
        raise RuntimeError("boom")
    assert conn.execute("SELECT count(*) FROM effect").fetchone()[0] == 0
    assert jobs.get_job(conn, job_id)["status"] == "running"


def test_writes_roll_back_when_the_lease_was_lost(conn) -> None:
    jobs.enqueue(conn, "a", None, T0)
    job = jobs.claim(conn, "w1", T0, 60)
    jobs.recover_interrupted(conn, T0 + 61, jobs.REASON_LEASE, [0.0])
    assert jobs.claim(conn, "w2", T0 + 61, 60) is not None  # someone else runs it now
    conn.execute("CREATE TABLE effect (x)")
    with pytest.raises(ConflictError), jobs.job_transaction(conn, job, T0 + 62):
        conn.execute("INSERT INTO effect VALUES (1)")
    assert conn.execute("SELECT count(*) FROM effect").fetchone()[0] == 0


def test_fail_backs_off_then_fails_for_good(conn) -> None:
    job_id = jobs.enqueue(conn, "a", None, T0, max_attempts=2)
    job = jobs.claim(conn, "w", T0, 60)
    assert jobs.fail(conn, job, T0 + 5, "ValueError: bad", BACKOFF) == "queued"
    row = jobs.get_job(conn, job_id)
    assert row["run_after"] == T0 + 5 + 30 and row["error"] == "ValueError: bad"
    assert jobs.claim(conn, "w", T0 + 34, 60) is None
    job = jobs.claim(conn, "w", T0 + 35, 60)
    assert job.attempts == 2
    assert jobs.fail(conn, job, T0 + 40, "ValueError: bad", BACKOFF) == "failed"
    assert jobs.get_job(conn, job_id)["status"] == "failed"
    assert events(conn, job_id) == ["queued", "claimed", "failed", "retried", "claimed", "failed"]


def test_restart_queues_a_running_job_again_with_an_interrupted_event_then_retries(conn) -> None:
    job_id = jobs.enqueue(conn, "a", None, T0)
    jobs.claim(conn, "old-process", T0, 60)
    recovered = jobs.recover_interrupted(conn, T0 + 10, jobs.REASON_RESTART, BACKOFF)
    assert recovered == [{"job_id": job_id, "kind": "a", "attempt": 1, "since": T0, "status": "queued",
                          "run_after": T0 + 40}]
    row = jobs.get_job(conn, job_id)
    assert row["status"] == "queued" and row["lease_owner"] is None and row["run_after"] == T0 + 40
    interrupted = [e for e in jobs.job_events(conn, job_id) if e["event"] == "interrupted"][0]
    assert interrupted["attempt"] == 1
    assert interrupted["detail"]["reason"] == "process restart" and interrupted["detail"]["since"] == T0
    assert jobs.claim(conn, "new", T0 + 39, 60) is None
    retry = jobs.claim(conn, "new", T0 + 40, 60)
    assert retry.id == job_id and retry.attempts == 2


def test_interruptions_past_max_attempts_fail_the_job(conn) -> None:
    job_id = jobs.enqueue(conn, "a", None, T0, max_attempts=1)
    jobs.claim(conn, "old", T0, 60)
    assert jobs.recover_interrupted(conn, T0 + 1, jobs.REASON_RESTART, BACKOFF)[0]["status"] == "failed"
    row = jobs.get_job(conn, job_id)
    assert row["status"] == "failed" and "interrupted by process restart" in row["error"]


def test_lease_expiry_recovers_only_expired_runs_of_other_owners(conn) -> None:
    a = jobs.enqueue(conn, "a", None, T0, unique=False)
    b = jobs.enqueue(conn, "a", None, T0, unique=False)
    c = jobs.enqueue(conn, "a", None, T0, unique=False)
    job_a = jobs.claim(conn, "dead", T0, 10)
    jobs.claim(conn, "me", T0, 10)
    job_c = jobs.claim(conn, "alive", T0, 10)
    assert jobs.renew(conn, job_c, "alive", T0 + 5, 60)
    assert not jobs.renew(conn, job_a, "someone-else", T0 + 5, 60)
    recovered = jobs.recover_interrupted(conn, T0 + 20, jobs.REASON_LEASE, BACKOFF, spare_owners=["me"])
    assert [r["job_id"] for r in recovered] == [a]
    assert [jobs.get_job(conn, i)["status"] for i in (a, b, c)] == ["queued", "running", "running"]
    detail = [e for e in jobs.job_events(conn, a) if e["event"] == "interrupted"][0]["detail"]
    assert detail["reason"] == "lease expiry"


def test_scratch_over_64_kib_is_refused(conn) -> None:
    jobs.enqueue(conn, "a", None, T0)
    job = jobs.claim(conn, "w", T0, 60)
    jobs.set_scratch(conn, job, "w", {"cursor": 12}, T0)
    assert jobs.get_job(conn, job.id)["scratch"] == {"cursor": 12}
    with pytest.raises(InputError, match="64|65536"):
        jobs.set_scratch(conn, job, "w", {"blob": "x" * 70000}, T0)
