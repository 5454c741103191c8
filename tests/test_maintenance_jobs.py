"""The calendar's maintenance jobs run through the one runner: a verified snapshot with rotation, integrity, retention."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine import jobs
from engine.errors import DamagedStoreError
from engine.jobs import maintenance, registry, runner
from engine.settings import LifeSettings, MaintenanceSettings, Settings
from engine.snapshot import verify
from engine.store import connect
from engine.store.life import put_trace_point
from tests.memory_helpers import fresh_db

T0 = 1_785_000_000.0
DAY = 86400.0


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    c = fresh_db(tmp_path / "her.db")
    yield c
    c.close()


def _run(conn: Any, kind: str, now: float, settings: Settings) -> runner.RunResult:
    job_id = jobs.enqueue(conn, kind, {"trigger": "calendar"}, now)
    job = jobs.claim(conn, "w", now, 60, job_id=job_id)
    assert job is not None
    return runner.run(conn, job, registry.JobRuntime(settings, None), lambda: now, [30.0])


def test_the_nightly_snapshot_is_verified_and_only_the_newest_are_kept(conn: Any, tmp_path: Path) -> None:
    settings = replace(Settings(), maintenance=MaintenanceSettings(snapshot_keep=2))
    folder = maintenance.snapshot_folder(tmp_path / "her.db")
    folder.mkdir()
    (folder / "notes.txt").write_text("the operator's, never rotated")
    for night in range(3):
        result = _run(conn, maintenance.SNAPSHOT, T0 + night * DAY, settings)
        assert result.error is None and result.status == "done"
    kept = sorted(p.name for p in folder.glob("snapshot-*.db"))
    assert kept == [maintenance.snapshot_name(T0 + DAY), maintenance.snapshot_name(T0 + 2 * DAY)]
    assert (folder / "notes.txt").exists()
    assert not list(folder.glob("*.partial"))
    assert verify(folder / kept[-1])["integrity"] == "ok"  # the export's manifest and hashes hold
    assert jobs.get_job(conn, result.job_id)["result"] == {"file": kept[-1], "bytes": pytest.approx(
        (folder / kept[-1]).stat().st_size), "rotated": 1}


def test_rotation_touches_only_snapshot_names() -> None:
    names = ["snapshot-20260101T043000Z.db", "x.db", "snapshot-20260103T043000Z.db", "snapshot-20260102T043000Z.db",
             "snapshot-20260103T043000Z.db.manifest.json"]
    assert maintenance.to_rotate(names, 2) == ["snapshot-20260101T043000Z.db"]
    assert maintenance.to_rotate(names, 5) == []


def test_the_integrity_job_passes_a_sound_file_and_fails_a_damaged_one(conn: Any, tmp_path: Path) -> None:
    assert _run(conn, maintenance.INTEGRITY, T0, Settings()).report == {"integrity": "ok"}
    conn.execute("PRAGMA writable_schema = ON")  # an index that no longer matches its table
    conn.execute("CREATE TABLE probe (x)")
    conn.execute("CREATE INDEX probe_x ON probe (x)")
    conn.execute("INSERT INTO probe VALUES (1), (2)")
    conn.execute("UPDATE sqlite_schema SET sql = 'CREATE INDEX probe_x ON probe (x DESC)' WHERE name = 'probe_x'")
    conn.close()
    damaged = connect(tmp_path / "her.db")
    try:
        result = _run(damaged, maintenance.INTEGRITY, T0 + 60, Settings())
        assert result.error is not None and "integrity_check" in str(result.error)
        assert jobs.get_job(damaged, result.job_id)["status"] == "queued"  # retried after its backoff
    finally:
        damaged.close()


def test_trace_retention_drops_only_points_past_the_retention(conn: Any) -> None:
    settings = replace(Settings(), life=LifeSettings(trace_retention_days=30))
    put_trace_point(conn, T0 - 31 * DAY, 0, 0, 0, 0.5, None)
    put_trace_point(conn, T0 - 29 * DAY, 0, 0, 0, 0.5, None)
    assert _run(conn, maintenance.RETENTION, T0, settings).report == {"pruned": 1}
    assert [r[0] for r in conn.execute("SELECT ts FROM mood_trace")] == [T0 - 29 * DAY]


def test_the_replica_job_records_the_verifiers_report_and_fails_when_the_check_does(conn: Any, tmp_path: Path) -> None:
    seen: list[tuple[Path, float]] = []

    def good(db: Path, now: float) -> dict[str, Any]:
        seen.append((db, now))
        return {"replicated": True, "integrity": "ok"}

    def bad(db: Path, now: float) -> dict[str, Any]:
        raise DamagedStoreError("the copy restored from file:///r/her fails PRAGMA integrity_check")

    def run(verifier: Any, now: float) -> runner.RunResult:
        job_id = jobs.enqueue(conn, maintenance.REPLICA_VERIFY, {"trigger": "calendar"}, now)
        job = jobs.claim(conn, "w", now, 60, job_id=job_id)
        assert job is not None
        return runner.run(conn, job, registry.JobRuntime(Settings(), None, replica_verifier=verifier),
                          lambda: now, [30.0])

    done = run(good, T0)
    assert done.status == "done" and seen == [(tmp_path / "her.db", T0)]
    assert jobs.get_job(conn, done.job_id)["result"] == {"replicated": True, "integrity": "ok"}
    failed = run(bad, T0 + DAY)
    assert failed.error is not None and "integrity_check" in str(failed.error)
    assert jobs.get_job(conn, failed.job_id)["status"] == "queued"  # retried after its backoff, reason kept
    assert run(None, T0 + 2 * DAY).report == {"replicated": None, "why": "no replica verifier here"}
