"""Restore a verified snapshot into a companion's file, crash-atomically, keeping the file it replaces.

Restore verifies the snapshot against its manifest first (engine/snapshot.verify: hashes, integrity,
schema not newer than this code, only anima's own schema objects), refuses to touch the file of a
running daemon (it takes the daemon's own lock, `<db>.lock`, for the whole replacement), and keeps the
replaced file as `<target>.bak-<UTC timestamp>` (its WAL checkpointed into it first).

Restore is crash-atomic: the new file is written and checked beside the target (`<target>.restoring`),
fsynced, and put in place by one rename, so a kill at any instant leaves the path holding the old file
or the new one, never nothing; the backup is a copy made before that rename. A daemon finding no file
but a `.restoring` beside it refuses to start (a restore into a new path was cut short) instead of
creating a new companion there. tests/test_restore_crash.py kills `anima restore` at each step.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import InputError, StoreError
from engine.faults import kill_point
from engine.snapshot import SNAPSHOT_MODE, file_sha256, fsync_dir, fsync_file, table_digests, verify
from engine.store import ops
from engine.store.connect import connect, sqlite_module
from engine.store.core import log_event
from engine.store.lock import DaemonLock, real_path
from engine.store.migrate import check_not_newer, db_schema_version

RESTORE_REFUSAL = ("database {db} is in use by a running anima daemon (pid {pid}); stop it first "
                   "(systemctl stop anima), then restore")


def restore(snapshot: Path, target: Path, now: float, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """Verify `snapshot`, then make it the database at `target`; returns what was done.

    `manifest`: what the snapshot must hold when it has no manifest file beside it (a file restored from a
    Litestream replica, daemon/replication.py, whose manifest is made from its own inspection)."""
    # Through a symlink the file to replace is the one it points at (replacing the link itself
    # would leave a running daemon's file untouched and report "restored").
    snapshot, target = Path(snapshot), real_path(Path(target))
    if target.exists() and snapshot.resolve() == target:
        raise InputError(f"restore source and target are the same file {target}")
    if target.is_dir():
        raise InputError(f"restore target {target} is a directory; give the database file's path")
    seen = verify(snapshot, manifest)
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y%m%dT%H%M%SZ")
    backup: Path | None = None
    with DaemonLock(target).held(RESTORE_REFUSAL):
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = restoring_path(target)
        partial.unlink(missing_ok=True)
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SNAPSHOT_MODE))
        shutil.copyfile(snapshot, partial)
        kill_point("restore.copied")
        _take_identity(partial, target)
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        if file_sha256(partial) != seen["file_sha256"]:
            partial.unlink(missing_ok=True)
            raise StoreError(f"copy of {snapshot} to {partial} differs from the snapshot; check the disk")
        try:
            version = _check_copy(partial, seen["tables"])
            _record_restore(partial, now, seen["file_sha256"])
        except Exception:
            partial.unlink(missing_ok=True)
            raise
        fsync_file(partial)
        fsync_dir(target.parent)
        kill_point("restore.verified")
        if target.exists():
            backup = _backup_name(target, stamp)
            _set_aside(target, backup)
        kill_point("restore.backed_up")
        for suffix in SIDE_SUFFIXES:  # a stale WAL must never meet the new file (its content is in the backup)
            Path(str(target) + suffix).unlink(missing_ok=True)
        kill_point("restore.sides_removed")
        os.replace(partial, target)  # the one step that swaps old for new: the path is never empty
        fsync_dir(target.parent)
        kill_point("restore.replaced")
    return {"target": str(target), "backup": str(backup) if backup else None, "schema_version": version,
            "tables": len(seen["tables"]), "contents": seen["summary"]}


SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
RESTORING_SUFFIX = ".restoring"


def restoring_path(target: Path) -> Path:
    """Where restore writes the new file before the one rename that puts it at `target`."""
    return target.with_name(target.name + RESTORING_SUFFIX)


def interrupted_restore(db: Path) -> Path | None:
    """The leftover of a restore killed before its rename, when `db` itself is missing (else None): a daemon
    must not start a new companion at a path her restore had not yet reached."""
    partial = restoring_path(real_path(db))
    return partial if partial.exists() and not os.path.lexists(db) else None


def _backup_name(target: Path, stamp: str) -> Path:
    backup = target.with_name(f"{target.name}.bak-{stamp}")
    n = 1
    while backup.exists():
        n += 1
        backup = target.with_name(f"{target.name}.bak-{stamp}-{n}")
    return backup


def _set_aside(target: Path, backup: Path) -> None:
    """Copy the file about to be replaced to `backup`, leaving it where it is until the one rename.

    Its WAL's committed frames are checkpointed into it first, so the copy (and the path, up to the
    rename) holds every committed turn; where that cannot finish (a damaged file, or another process
    reading it) the -wal and -journal are copied beside the backup, so nothing committed is lost even
    though the path itself then briefly holds the file without its WAL. A copy, not a rename, because
    a rename would leave the path empty until the new file lands; not a hard link, because a file with
    two names is refused by the lock (engine/store/lock.py) if a crash left both.
    """
    checkpointed = _checkpoint(target)
    sides = [] if checkpointed else [s for s in ("-wal", "-journal") if Path(str(target) + s).exists()]
    for suffix in ("", *sides):
        source, dest = Path(str(target) + suffix), Path(str(backup) + suffix)
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.unlink(missing_ok=True)
        shutil.copyfile(source, tmp)
        shutil.copymode(source, tmp)
        st = source.stat()
        if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(tmp, st.st_uid, st.st_gid)
        fsync_file(tmp)
        os.replace(tmp, dest)
    fsync_dir(target.parent)


def _checkpoint(target: Path) -> bool:
    """Checkpoint `target`'s WAL into it (a hot rollback journal is rolled back by the open); True when the
    file alone now holds every committed transaction."""
    try:
        conn = sqlite_module().connect(str(target), isolation_level=None, timeout=2.0)
    except Exception:
        return False
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return ops.checkpoint_truncate(conn)
    except Exception:
        return False
    finally:
        conn.close()


def _check_copy(partial: Path, tables: dict[str, Any]) -> int:
    """The copy's tables equal the snapshot's, checked before it replaces anything; returns its schema version."""
    check = connect(partial, readonly=True)  # reads only: no -wal/-shm owned by whoever ran restore
    try:
        check_not_newer(check)
        if table_digests(check) != tables:
            raise StoreError(f"copy {partial} does not match the snapshot's tables; nothing was replaced")
        return db_schema_version(check)
    finally:
        check.close()


def _record_restore(partial: Path, now: float, snapshot_sha256: str) -> None:
    """Append the `restore` event to the verified copy, so the file says it was restored and the next
    daemon logs `store.restored` once (engine/store/oplog.py), whoever ran the restore.

    Rollback journal for this one write: a root `anima restore` must leave no root-owned -wal or
    -shm beside the file the service user will open; WAL mode is set back before the file is used.
    """
    conn = sqlite_module().connect(str(partial), isolation_level=None)
    try:
        ops.use_rollback_journal(conn)
        log_event(conn, now, "restore", actor="cli", snapshot_sha256=snapshot_sha256)
        ops.use_wal(conn)
    finally:
        conn.close()
    for suffix in ("-wal", "-shm", "-journal"):
        Path(str(partial) + suffix).unlink(missing_ok=True)


def _take_identity(new_file: Path, target: Path) -> None:
    """Give the restored file the owner, group and mode of the file it replaces (a root `anima restore`
    must leave a file the service user can open); a new target gets its directory's owner and 0640."""
    if target.exists():
        st = target.stat()
        uid, gid, mode = st.st_uid, st.st_gid, st.st_mode & 0o777
    else:
        st = target.parent.stat()
        uid, gid, mode = st.st_uid, st.st_gid, SNAPSHOT_MODE
    if os.geteuid() == 0 and (uid, gid) != (os.geteuid(), os.getegid()):
        os.chown(new_file, uid, gid)
    os.chmod(new_file, mode)
