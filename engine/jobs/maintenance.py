"""The maintenance jobs the calendar queues: a verified snapshot with rotation, an integrity check, trace retention.

Each is a job kind like consolidation (engine/jobs/registry.py), so a firing the calendar queued
(daemon/scheduler.py) is a leased row: it survives a restart, is retried with backoff, and shows in
`anima jobs`. A handler does its work, then records the job's `done` with what it found in one commit
(`job_transaction`); the snapshot's file work cannot be in that transaction, so it is written under a
temporary name and renamed only once verified: a retried snapshot job never leaves a half-written one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import DamagedStoreError, StoreError
from engine.jobs.lease import Job, job_transaction
from engine.settings import Settings
from engine.store import ops
from engine.store.connect import database_file
from engine.store.life import prune_trace

SNAPSHOT = "snapshot"
INTEGRITY = "integrity_check"
RETENTION = "trace_retention"
SNAPSHOT_NAME = re.compile(r"^snapshot-\d{8}T\d{6}Z\.db$")


def snapshot_folder(db_path: Path) -> Path:
    """Where her nightly snapshots live: `<db>.snapshots/` beside her file (same disk, same permissions)."""
    return db_path.with_name(db_path.name + ".snapshots")


def snapshot_name(now: float) -> str:
    """`snapshot-20261205T043000Z.db`: UTC, so names sort by time whatever her zone."""
    return f"snapshot-{datetime.fromtimestamp(now, UTC):%Y%m%dT%H%M%SZ}.db"


def to_rotate(names: list[str], keep: int) -> list[str]:
    """The snapshot names past the newest `keep` (oldest first); names that are not snapshots are never touched."""
    ours = sorted(n for n in names if SNAPSHOT_NAME.match(n))
    return ours[:-keep] if keep > 0 else ours


def take_snapshot(db_path: Path, now: float, keep: int) -> dict[str, Any]:
    """Export her file (engine/snapshot.py: online backup, integrity_check, manifest) and rotate the old ones."""
    from engine.snapshot import export, manifest_path

    folder = snapshot_folder(db_path)
    folder.mkdir(mode=0o750, exist_ok=True)
    dest = folder / snapshot_name(now)
    manifest = export(db_path, dest, now, overwrite=True)  # verified before it takes its name
    removed = to_rotate([p.name for p in folder.iterdir()], keep)
    for name in removed:
        (folder / name).unlink(missing_ok=True)
        manifest_path(folder / name).unlink(missing_ok=True)
    return {"file": dest.name, "bytes": manifest["file_bytes"], "rotated": len(removed)}


def _db_path(conn: Any) -> Path:
    path = database_file(conn)
    if path is None:
        raise StoreError("a maintenance job needs her database file; this connection is in memory")
    return Path(path)


def run_snapshot(conn: Any, job: Job, settings: Settings, now: float) -> dict[str, Any]:
    report = take_snapshot(_db_path(conn), now, settings.maintenance.snapshot_keep)
    with job_transaction(conn, job, now) as out:
        out.result = report
    return report


def run_integrity_check(conn: Any, job: Job, settings: Settings, now: float) -> dict[str, Any]:
    """PRAGMA integrity_check: a damaged file fails the job (retried, then failed for good: `anima jobs` shows why)."""
    problems = ops.integrity_problems(conn)
    if problems != ["ok"]:
        raise DamagedStoreError(f"integrity_check of {_db_path(conn)} found {len(problems)} problem(s): "
                                f"{'; '.join(problems)[:200]}; restore a snapshot (anima restore SNAPSHOT)")
    report = {"integrity": "ok"}
    with job_transaction(conn, job, now) as out:
        out.result = report
    return report


def run_trace_retention(conn: Any, job: Job, settings: Settings, now: float) -> dict[str, Any]:
    before = now - settings.life.trace_retention_days * 86400.0
    with job_transaction(conn, job, now) as out:
        out.result = {"pruned": prune_trace(conn, before)}
    return out.result
