"""The maintenance jobs the calendar queues: a verified snapshot with rotation, an integrity check, trace retention,
and the restore-and-verify of her replica.

Each is a job kind like consolidation (engine/jobs/registry.py), so a firing the calendar queued
(daemon/scheduler.py) is a leased row: it survives a restart, is retried with backoff, and shows in
`anima jobs`. A handler does its work, then records the job's `done` with what it found in one commit
(`job_transaction`); the snapshot's file work cannot be in that transaction, so it is written under a
temporary name and renamed only once verified: a retried snapshot job never leaves a half-written one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import DamagedStoreError, StoreError
from engine.jobs.lease import Job, job_transaction
from engine.settings import Settings
from engine.store import ops
from engine.store.connect import database_file
from engine.store.life import prune_trace
from engine.store.memory import forget_generation

SNAPSHOT = "snapshot"
INTEGRITY = "integrity_check"
RETENTION = "trace_retention"
REPLICA_VERIFY = "replica_verify"
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


def scrub_snapshots(db_path: Path) -> int:
    """After a forget: remove every copy of her this module made (nightly snapshots, their manifests, a
    half-written one, a replica check's scratch folder); forget means gone from any copy a restore could
    reach. Returns how many snapshots were removed (the caller queues a fresh one when there were some)."""
    import shutil

    removed = 0
    folder = snapshot_folder(db_path)
    if folder.is_dir():
        for path in folder.iterdir():
            if SNAPSHOT_NAME.match(path.name):
                removed += 1
            if path.name.startswith("snapshot-") and path.is_file():
                path.unlink(missing_ok=True)
    for scratch in db_path.parent.glob(f".{db_path.name}.verify-*"):
        shutil.rmtree(scratch, ignore_errors=True)
    return removed


def take_snapshot(db_path: Path, now: float, keep: int, generation: Callable[[], int] | None = None) -> dict[str, Any]:
    """Export her file (engine/snapshot.py: online backup, integrity_check, manifest) and rotate the old ones.

    `generation` reads her forget generation: a forget that commits while the copy is taken may leave
    what it forgot in the copy, so a changed generation throws the copy away (the job is retried). A
    forget that commits after the check finds this snapshot in place and removes it (`scrub_snapshots`).
    """
    from engine.snapshot import export, manifest_path

    folder = snapshot_folder(db_path)
    folder.mkdir(mode=0o750, exist_ok=True)
    dest = folder / snapshot_name(now)
    before = generation() if generation is not None else None
    manifest = export(db_path, dest, now, overwrite=True)  # verified before it takes its name
    if generation is not None and generation() != before:
        dest.unlink(missing_ok=True)
        manifest_path(dest).unlink(missing_ok=True)
        raise StoreError("a forget ran while the snapshot was taken; the copy was discarded and will be taken again")
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
    report = take_snapshot(_db_path(conn), now, settings.maintenance.snapshot_keep,
                           generation=lambda: forget_generation(conn))
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


ReplicaVerifier = Callable[[Path, float], dict[str, Any]]


def run_replica_verify(conn: Any, job: Job, settings: Settings, now: float,
                       verifier: ReplicaVerifier | None) -> dict[str, Any]:
    """Restore her replica somewhere private and check it (the daemon's verifier: daemon/replica_verify.py).

    Without a verifier (code that cannot restore replicas) the job says so and is done; a replica that fails
    its check raises, so the job is retried and then failed for good, with the reason in `anima jobs`.
    """
    report = verifier(_db_path(conn), now) if verifier is not None else {"replicated": None,
                                                                           "why": "no replica verifier here"}
    with job_transaction(conn, job, now) as out:
        out.result = report
    return report
