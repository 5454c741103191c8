"""A job whose runner is gone never blocks later runs: CLI recovery by dead owner and by lease expiry."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from engine import jobs
from engine.consolidate.run import JOB_KIND
from engine.store import connect, migrate
from tests.conftest import run_anima, write_config

T0 = 1_780_000_000.0
HOST = socket.gethostname()


def _dead_pid() -> int:
    proc = subprocess.Popen(["sleep", "30"])
    proc.kill()
    proc.wait()
    return proc.pid


def _running_job(db: Path, owner: str, lease_s: float = 86_400.0) -> int:
    conn = connect(db)
    migrate(conn, T0)
    job_id = jobs.enqueue(conn, JOB_KIND, {"trigger": "cli"}, T0)
    job = jobs.claim(conn, owner, T0, lease_s, job_id=job_id)
    assert job is not None
    conn.close()
    return job_id


def test_owner_gone_rules() -> None:
    alive = {10}.__contains__
    assert jobs.owner_gone(f"cli:{HOST}:11", HOST, True, alive)
    assert not jobs.owner_gone(f"cli:{HOST}:10", HOST, False, alive)
    assert not jobs.owner_gone("cli:otherhost:11", HOST, False, alive)  # another machine: its lease decides
    assert jobs.owner_gone(f"{HOST}:10:abc", HOST, False, alive)  # a daemon owner, but no daemon holds the lock
    assert not jobs.owner_gone(f"{HOST}:10:abc", HOST, True, alive)
    assert jobs.owner_gone(f"{HOST}:11:abc", HOST, True, alive)
    assert jobs.owner_gone(None, HOST, True, alive)


@pytest.mark.parametrize("owner_kind", ["cli", "daemon"])
def test_consolidate_after_a_killed_run_recovers_the_job_instead_of_exiting_2(tmp_path: Path, owner_kind: str) -> None:
    db = tmp_path / "her.db"
    pid = _dead_pid()
    owner = f"cli:{HOST}:{pid}" if owner_kind == "cli" else f"{HOST}:{pid}:dead00"
    job_id = _running_job(db, owner)
    config = write_config(tmp_path / "config.toml")
    result = run_anima("--config", str(config), "--db", str(db), "consolidate", "--now", "--json", timeout=120)
    assert result.code == 0, result.err
    assert json.loads(result.out)["job_id"] == job_id
    assert f"recovered job {job_id}" in result.err
    conn = connect(db)
    events = [e["event"] for e in jobs.job_events(conn, job_id)]
    conn.close()
    assert events[-3:] == ["retried", "claimed", "done"] and "interrupted" in events


def test_recover_orphans_leaves_live_owners_alone(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    live = subprocess.Popen(["sleep", "30"])
    try:
        job_id = _running_job(db, f"cli:{HOST}:{live.pid}")
        conn = connect(db)
        gone = lambda who: jobs.owner_gone(who, HOST, False, lambda p: p == live.pid)  # noqa: E731
        assert jobs.recover_orphans(conn, T0 + 1, gone) == []
        assert jobs.get_job(conn, job_id)["status"] == "running"
        conn.close()
    finally:
        live.kill()
        live.wait()
