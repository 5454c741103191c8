"""Accessors of the job and job_event tables: the one owner of the job SQL (engine/store/queries/jobs.sql).

procrastinate's `manager.py` is the model: the job rules (engine/jobs/lease.py) say what happens,
these functions say it to the database, one named query each. Rows come back as the driver's
rows; the rules turn them into `Job` values. Transactions are the caller's (a job's writes and its
`done` share one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.store.queries import q


def insert_event(conn: Any, job_id: int, now: float, attempt: int, event: str, detail: dict[str, Any]) -> None:
    conn.execute(q("insert_job_event"), {"job_id": job_id, "ts": now, "attempt": attempt, "event": event,
                                         "detail_json": json.dumps(detail, ensure_ascii=False)})


def open_of_kind(conn: Any, kind: str) -> Any:
    """The oldest unfinished job of `kind`, or None."""
    return conn.execute(q("open_job_of_kind"), {"kind": kind}).fetchone()


def insert(conn: Any, kind: str, payload_json: str, max_attempts: int, run_after: float, now: float) -> int:
    cursor = conn.execute(q("insert_job"), {"kind": kind, "payload_json": payload_json,
                                            "max_attempts": max_attempts, "run_after": run_after, "now": now})
    return int(cursor.lastrowid)


def any_ready(conn: Any, now: float) -> bool:
    """Whether a job of any kind is queued and due by `now` (one index probe)."""
    return bool(conn.execute(q("any_ready_job"), {"now": now}).fetchone()[0])


def claim(conn: Any, owner: str, now: float, lease_s: float, kinds: Sequence[str] | None,
          job_id: int | None) -> Any:
    """Lease the oldest ready job (of `kinds`, or the one `job_id`) in one statement; its row, or None."""
    return conn.execute(q("claim_job"), {
        "owner": owner, "now": now, "lease_s": lease_s, "job_id": job_id,
        "kinds": json.dumps(list(kinds)) if kinds is not None else None}).fetchone()


def renew(conn: Any, job_id: int, owner: str, now: float, lease_s: float) -> bool:
    """Extend `owner`'s lease; False when the job is no longer running under it."""
    cursor = conn.execute(q("renew_lease"), {"id": job_id, "owner": owner, "now": now, "lease_s": lease_s})
    return bool(cursor.rowcount == 1)


def set_scratch(conn: Any, job_id: int, owner: str, scratch_json: str, now: float) -> None:
    conn.execute(q("set_scratch"), {"id": job_id, "owner": owner, "now": now, "scratch_json": scratch_json})


def finish(conn: Any, job_id: int, owner: str | None, now: float, result_json: str, error: str | None,
           scratch_json: str) -> bool:
    """Mark the job done while `owner` still holds its lease; False (nothing written) otherwise."""
    cursor = conn.execute(q("finish_job"), {"id": job_id, "owner": owner, "now": now, "result_json": result_json,
                                            "error": error, "scratch_json": scratch_json})
    return bool(cursor.rowcount == 1)


def requeue(conn: Any, job_id: int, status: str, run_after: float, error: str, now: float) -> None:
    """Release the lease: queued again from `run_after`, or failed for good."""
    conn.execute(q("requeue_job"), {"id": job_id, "status": status, "run_after": run_after, "error": error,
                                    "now": now})


def running(conn: Any, now: float) -> list[Any]:
    """Every running job, whatever its lease (`now` unused: the same signature as `expired`)."""
    return list(conn.execute(q("running_jobs")).fetchall())


def expired(conn: Any, now: float) -> list[Any]:
    """Running jobs whose lease ran out before `now`."""
    return list(conn.execute(q("expired_jobs"), {"now": now}).fetchall())


def get(conn: Any, job_id: int) -> Any:
    return conn.execute(q("get_job"), {"id": job_id}).fetchone()


def newest(conn: Any, limit: int) -> list[Any]:
    return list(conn.execute(q("list_jobs"), {"limit": limit}).fetchall())


def status_counts(conn: Any) -> list[Any]:
    return list(conn.execute(q("job_status_counts")).fetchall())


def events(conn: Any, job_id: int) -> list[Any]:
    return list(conn.execute(q("job_events"), {"job_id": job_id}).fetchall())


def last_finished(conn: Any, kind: str) -> tuple[float | None, float | None]:
    """(when `kind` last finished done, when it last failed for good), each None if never."""
    row = conn.execute(q("last_finished_of_kind"), {"kind": kind}).fetchone()
    return row["last_done"], row["last_failed"]


def unconsolidated_count(conn: Any) -> int:
    """Episodes waiting for consolidation: the backlog the schedule weighs (a consolidate.sql query)."""
    return int(conn.execute(q("count_unconsolidated")).fetchone()[0])
