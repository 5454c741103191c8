"""Job states: the JobStatus enum equals the SQL CHECK, the SQL's status words are its values, and
migration 0008 reads an old `interrupted` row as `queued` with its history kept."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from engine import jobs
from engine.jobs.status import FINISHED, OPEN, JobStatus
from engine.store import connect, migrate
from engine.store.queries import q

T0 = 1_780_000_000.0


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    c = connect(tmp_path / "status.db")
    migrate(c, now=0)
    yield c
    c.close()


def check_values(conn: Any) -> list[str]:
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'job'").fetchone()[0]
    match = re.search(r"status\s+TEXT[^,]*?CHECK\s*\(\s*status\s+IN\s*\(([^)]*)\)\s*\)", sql, re.S)
    assert match, "the job table has no CHECK on status"
    return re.findall(r"'([a-z_]+)'", match.group(1))


def test_the_enum_and_the_sql_check_hold_the_same_states(conn: Any) -> None:
    assert check_values(conn) == [s.value for s in JobStatus]
    assert set(OPEN) | set(FINISHED) == set(JobStatus) and not set(OPEN) & set(FINISHED)


def test_a_status_outside_the_enum_is_refused_by_the_file(conn: Any) -> None:
    job_id = jobs.enqueue(conn, "a", None, T0)
    with pytest.raises(Exception, match="CHECK"):
        conn.execute("UPDATE job SET status = 'interrupted' WHERE id = ?", (job_id,))


def test_every_status_word_in_the_job_queries_is_an_enum_value() -> None:
    text = (resources.files("engine.store") / "queries" / "jobs.sql").read_text(encoding="utf-8")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    words = re.findall(r"status\s*(?:=|IN)\s*\(?((?:\s*'[a-z_]+'\s*,?)+)", code)
    found = {w for group in words for w in re.findall(r"'([a-z_]+)'", group)}
    assert found and found <= {s.value for s in JobStatus}, found - {s.value for s in JobStatus}


def test_pending_counts_and_unique_enqueue_use_the_open_states(conn: Any) -> None:
    ids = {}
    for status in JobStatus:
        ids[status] = jobs.enqueue(conn, f"kind-{status.value}", None, T0, unique=False)
        conn.execute("UPDATE job SET status = ? WHERE id = ?", (status.value, ids[status]))
    counts = dict(conn.execute(q("api_counts")).fetchone())
    assert counts["jobs_pending"] == len(OPEN) and counts["jobs_failed"] == 1
    assert jobs.status_counts(conn) == {s.value: 1 for s in JobStatus}
    for status in JobStatus:
        reused = jobs.enqueue(conn, f"kind-{status.value}", None, T0)
        assert (reused == ids[status]) == (status in OPEN), status


def test_migration_0008_reads_interrupted_as_queued_and_keeps_every_row_and_event(tmp_path: Path) -> None:
    c = connect(tmp_path / "old.db")
    try:
        migrate(c, now=0, upto=7)
        old = [("a", "queued", 0, T0), ("b", "running", 1, T0), ("c", "interrupted", 2, T0 + 300),
               ("d", "done", 1, T0), ("e", "failed", 5, T0)]
        for kind, status, attempts, run_after in old:
            c.execute("INSERT INTO job (kind, status, attempts, run_after, created_at, updated_at, error) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", (kind, status, attempts, run_after, T0, T0, f"note {kind}"))
        c.execute("INSERT INTO job_event (job_id, ts, attempt, event) VALUES (3, ?, 2, 'interrupted')", (T0,))
        assert migrate(c, now=1)[0] == 8   # 0008 first; later migrations follow it
        rows = [tuple(r) for r in c.execute("SELECT id, kind, status, attempts, run_after, error FROM job ORDER BY id")]
        assert rows == [(1, "a", "queued", 0, T0, "note a"), (2, "b", "running", 1, T0, "note b"),
                        (3, "c", "queued", 2, T0 + 300, "note c"), (4, "d", "done", 1, T0, "note d"),
                        (5, "e", "failed", 5, T0, "note e")]
        assert [tuple(r) for r in c.execute("SELECT job_id, event FROM job_event")] == [(3, "interrupted")]
        assert c.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(Exception, match="FOREIGN KEY"):
            c.execute("INSERT INTO job_event (job_id, ts, attempt, event) VALUES (99, 0, 0, 'x')")
        assert {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'job'")} \
            >= {"job_ready", "job_kind_status"}
        # The interrupted job's retry is what it was waiting for: due at its run_after, not before.
        assert jobs.claim(c, "w", T0 + 299, 60, kinds=["c"]) is None
        assert jobs.claim(c, "w", T0 + 300, 60, kinds=["c"]).attempts == 3
    finally:
        c.close()
