"""Export and restore the whole companion as one verified SQLite file with a manifest beside it.

Export copies the live database with SQLite's online backup API (a consistent snapshot even while
the daemon writes: the backup runs in one step inside one read transaction), switches the copy
out of WAL so it is one self-contained file, verifies it (`PRAGMA integrity_check`, schema
version, row count and content hash of every table) and writes `<file>.manifest.json` saying
what is in it. Restore verifies the snapshot against its manifest first, refuses a schema newer
than this code, a failed check or a hash mismatch, refuses to touch the file of a running daemon
(it takes the daemon's own lock, `<db>.lock`, for the whole replacement), and keeps the replaced
file as `<target>.bak-<UTC timestamp>` (its WAL checkpointed into it first).

Restore is crash-atomic: the new file is written and checked beside the target (`<target>.restoring`),
fsynced, and put in place by one rename, so a kill at any instant leaves the path holding the old file
or the new one, never nothing; the backup is a copy made before that rename. A daemon finding no file
but a `.restoring` beside it refuses to start (a restore into a new path was cut short) instead of
creating a new companion there. tests/test_restore_crash.py kills `anima restore` at each step.

Content hash of a table: sha256 over its rows ordered by primary key (rowid when there is none),
each value type-tagged (NULL, integer, float as hex, text, blob), so equal hashes mean equal rows.
Virtual tables (FTS5, vec0) are not hashed themselves; their shadow tables are ordinary tables
and are hashed like any other, which covers their contents consistently.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import struct
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.errors import AnimaError, DamagedStoreError, InputError, StorageFullError, StoreError
from engine.faults import kill_point
from engine.store import ops
from engine.store.connect import connect, disk_is_full, sqlite_module, store_fault
from engine.store.core import log_event
from engine.store.lock import DaemonLock, real_path
from engine.store.migrate import check_not_newer, code_schema_version, db_schema_version
from engine.store.schema import foreign_objects

MANIFEST_FORMAT = 1
SNAPSHOT_MODE = 0o640  # like the database (engine.store.connect.DB_FILE_MODE): her chats are not world-readable
MANIFEST_SUFFIX = ".manifest.json"
_SQLITE_READONLY, _SQLITE_CANTOPEN = 8, 14


def manifest_path(snapshot: Path) -> Path:
    return snapshot.with_name(snapshot.name + MANIFEST_SUFFIX)


# ---------------------------------------------------------------- hashing


def hashed_tables(conn: Any) -> list[str]:
    """Every ordinary table (shadow tables of FTS5/vec0 included), virtual tables and sqlite_* excluded."""
    return ops.ordinary_tables(conn)


def _feed(digest: Any, value: Any) -> None:
    if value is None:
        digest.update(b"N")
    elif isinstance(value, int):
        digest.update(b"i" + str(value).encode() + b";")
    elif isinstance(value, float):
        digest.update(b"f" + struct.pack(">d", value))
    elif isinstance(value, str):
        data = value.encode("utf-8")
        digest.update(b"s" + str(len(data)).encode() + b":" + data)
    else:
        data = bytes(value)
        digest.update(b"b" + str(len(data)).encode() + b":" + data)


def table_digest(conn: Any, table: str) -> dict[str, Any]:
    digest = hashlib.sha256()
    count = 0
    for row in ops.rows_by_key(conn, table):
        count += 1
        digest.update(b"R")
        for value in tuple(row):
            _feed(digest, value)
    return {"rows": count, "sha256": digest.hexdigest()}


def table_digests(conn: Any) -> dict[str, dict[str, Any]]:
    return {table: table_digest(conn, table) for table in hashed_tables(conn)}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def integrity(conn: Any) -> str:
    return "; ".join(ops.integrity_problems(conn))[:500]


# ---------------------------------------------------------------- summary (what is in it)


def summary(conn: Any) -> dict[str, Any]:
    """What the file holds, for people: her, her chart, chats, memories, facts, relations, life, mood."""
    companion = ops.companion_label(conn)
    who = None
    if companion is not None:
        chart = json.loads(companion[4] or "{}")
        who = {"name": companion[0], "birth_local": companion[1], "birth_tz": companion[2],
               "birth_place": companion[3],
               "chart": {"pillars": chart.get("pillars"), "day_master": chart.get("day_master"),
                         "day_master_element": chart.get("day_master_element"), "elements": chart.get("elements")}}
    mood_json = ops.mood_json(conn)
    activity = ops.current_activity_label(conn)
    life = ops.life_counts(conn)
    return {
        "companion": who,
        "chats": ops.chat_counts(conn),
        "memories": ops.memory_counts(conn),
        "facts": ops.fact_counts(conn),
        "relations": ops.relation_counts(conn),
        # Counts only: her untold life is private even from this file's label.
        "life": {**life,
                 "current_activity": None if activity is None else {"kind": activity[0], "label": activity[1],
                                                                     "since": activity[2]}},
        "mood": json.loads(mood_json) if mood_json else None,
    }


# ---------------------------------------------------------------- verify


def inspect(path: Path) -> dict[str, Any]:
    """Integrity, schema version and digests of a snapshot file (opened read-only)."""
    if not path.exists():
        raise InputError(f"snapshot {path} does not exist")
    if not path.is_file():
        raise InputError(f"snapshot {path} is not a file (a directory?); give the snapshot file written by anima export")
    try:
        conn = connect(path, readonly=True)
    except DamagedStoreError as exc:
        raise InputError(f"snapshot {path} is not a usable anima snapshot: {exc}") from None
    try:
        problems = integrity(conn)
        return {"integrity": problems, "schema_version": db_schema_version(conn),
                "foreign_objects": foreign_objects(conn) if problems == "ok" else [],
                "tables": table_digests(conn), "summary": summary(conn)}
    finally:
        conn.close()


MAX_MANIFEST_BYTES = 16 << 20  # a manifest is a few KiB (one line per table); a link to /dev/zero is not one
SPARSE_FROM_BYTES = 16 << 20  # below this a sparse file costs nothing to hash


def _read_regular(path: Path, what: str, limit: int, *, head: bool = False) -> bytes:
    """At most `limit` bytes of a regular file, or InputError: a device, FIFO or directory is refused before
    any read (O_NONBLOCK, so opening a FIFO does not wait for a writer), and a bigger file is refused
    (`head`: its first `limit` bytes are what is wanted)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{what} {path} is not a regular file (a device, FIFO or directory); "
                         "give the file anima export wrote")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit and not head:
        raise InputError(f"{what} {path} is larger than {limit} bytes; it is not one anima export wrote")
    return data


def check_snapshot_file(path: Path) -> None:
    """Cheap checks before a snapshot is hashed: a regular file, an SQLite header whose page count and size
    agree with the file's size, and not mostly holes (a 20 GB sparse file would otherwise be hashed for
    minutes before the hash said no). The size its manifest records is compared by `verify`."""
    header = _read_regular(path, "snapshot", 100, head=True)[:100]
    st = os.stat(path)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise InputError(f"snapshot {path} is not an SQLite database; give the file anima export wrote")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    header_counts = header[92:96] == header[24:28]  # the in-header page count is valid (SQLite file format 1.3.7)
    if header_counts and pages * page_size != st.st_size:
        raise InputError(f"snapshot {path} is {st.st_size} bytes but its header says {pages} pages of {page_size}; "
                         "it was truncated or padded: use another snapshot")
    allocated = st.st_blocks * 512
    if st.st_size > SPARSE_FROM_BYTES and allocated < st.st_size // 2:
        raise InputError(f"snapshot {path} is a sparse file ({allocated} of {st.st_size} bytes on disk); "
                         "anima export never writes one: use another snapshot")


def read_manifest(mpath: Path) -> dict[str, Any]:
    """The manifest as a dict, or InputError saying why it is not one (unreadable, not JSON, not an object)."""
    data = _read_regular(mpath, "manifest", MAX_MANIFEST_BYTES)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"manifest {mpath} is not valid JSON ({type(exc).__name__}); it was damaged: "
                         "use another snapshot") from None
    if not isinstance(value, dict):
        raise InputError(f"manifest {mpath} is not a JSON object; it was damaged: use another snapshot")
    if not isinstance(value.get("tables", {}), dict):
        raise InputError(f"manifest {mpath} has no valid tables section; it was damaged: use another snapshot")
    return value


def verify(path: Path, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """Check a snapshot; raise StoreError naming the first problem. Returns what was inspected, with the
    file's hash (restore compares its copy against it)."""
    if manifest is None:
        mpath = manifest_path(path)
        if not mpath.exists():
            raise InputError(f"no manifest {mpath} beside {path}; a snapshot is the file plus its manifest "
                             "(made by anima export)")
        candidates = [read_manifest(mpath)]
        if pending_manifest_path(path).exists():  # an export --force killed between its two renames
            candidates.append(read_manifest(pending_manifest_path(path)))
    else:
        candidates = [manifest]
    if not path.is_file():
        raise InputError(f"snapshot {path} is not a file (a directory?); give the snapshot file written by anima export")
    check_snapshot_file(path)
    size = path.stat().st_size
    sized = [m for m in candidates if not isinstance(m.get("file_bytes"), int) or m["file_bytes"] == size]
    if not sized:
        raise StoreError(f"snapshot {path} is {size} bytes, its manifest says {candidates[0].get('file_bytes')}: "
                         "it was changed or damaged after export; use another snapshot")
    digest = file_sha256(path)
    manifest = next((m for m in sized if m.get("file_sha256") in (None, "", digest)), None)
    if manifest is None:
        raise StoreError(f"snapshot {path} does not match its manifest (file hash differs): it was changed or "
                         "damaged after export; use another snapshot")
    if manifest.get("format") != MANIFEST_FORMAT:
        raise StoreError(f"manifest of {path} has format {manifest.get('format')!r}; this anima reads format "
                         f"{MANIFEST_FORMAT}")
    seen = {**inspect(path), "file_sha256": digest}
    if seen["integrity"] != "ok":
        raise StoreError(f"snapshot {path} fails PRAGMA integrity_check: {seen['integrity'][:200]}")
    if seen["schema_version"] > code_schema_version():
        raise StoreError(f"snapshot {path} has schema version {seen['schema_version']}, newer than this anima "
                         f"understands (up to {code_schema_version()}); upgrade anima first")
    if seen["foreign_objects"]:
        raise InputError(f"snapshot {path} has schema objects anima's migrations do not make "
                         f"({', '.join(seen['foreign_objects'][:5])}); refused: a foreign trigger or table can keep "
                         "forgotten text or reveal untold life. Restore a snapshot anima exported from a clean file")
    if seen["schema_version"] != manifest.get("schema_version"):
        raise StoreError(f"snapshot {path} has schema version {seen['schema_version']} but its manifest says "
                         f"{manifest.get('schema_version')}")
    expected = manifest.get("tables", {})
    for table in sorted(set(expected) | set(seen["tables"])):
        want, got = expected.get(table), seen["tables"].get(table)
        if want != got:
            want_rows = want.get("rows") if isinstance(want, dict) else None
            raise StoreError(f"snapshot {path}: table {table} does not match its manifest "
                             f"(manifest {want_rows} rows, file {got and got['rows']} rows); "
                             "use another snapshot")
    return seen


# ---------------------------------------------------------------- export


def export(source: Path, dest: Path, now: float, *, overwrite: bool = False) -> dict[str, Any]:
    """Snapshot `source` (live or not) into `dest` + manifest; returns the manifest."""
    source, dest = Path(source), Path(dest)
    if not source.exists():
        raise InputError(f"database {source} does not exist; nothing to export")
    if dest.resolve() == source.resolve():
        raise InputError(f"export target {dest} is the database itself; give another path")
    if dest.exists() and not overwrite:
        raise InputError(f"{dest} already exists; remove it or give another path")
    if dest.is_dir():
        raise InputError(f"export target {dest} is a directory; give a file path inside it")
    if not dest.parent.is_dir():
        # A typo in the path must not grow a directory tree: the folder is the operator's to make.
        raise InputError(f"directory {dest.parent} does not exist; create it first (mkdir -p) or give another path")
    partial = dest.with_name(dest.name + ".partial")
    pending = pending_manifest_path(dest)
    try:
        return _export_into(source, dest, partial, pending, now)
    except Exception as exc:
        # Nothing half-written stays: a .partial left on the database's disk kept it full (issue 25).
        for leftover in (partial, Path(str(partial) + "-journal"), pending, pending.with_name(pending.name + ".tmp")):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
        raise _export_fault(exc, dest) from None


def _export_into(source: Path, dest: Path, partial: Path, pending: Path, now: float) -> dict[str, Any]:
    """Write the copy beside `dest`, check it, write its manifest beside it, then rename each into place:
    until the copy's rename the old export (a --force) is whole; a kill between the two renames leaves the
    new file with its manifest still `<dest>.manifest.json.next`, which verify accepts (it matches)."""
    for leftover in (partial, Path(str(partial) + "-journal")):
        leftover.unlink(missing_ok=True)
    os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SNAPSHOT_MODE))  # 0640 whatever the umask
    src = connect(source, readonly=True)
    try:
        out = sqlite_module().connect(str(partial), isolation_level=None)
        try:
            # pages=-1: the whole database in ONE step, i.e. one read transaction: a consistent
            # snapshot even while the daemon commits (stepwise backups restart on every write).
            src.backup(out, pages=-1)
            ops.use_rollback_journal(out)  # one self-contained file, no -wal beside it
        finally:
            out.close()
    finally:
        src.close()
    kill_point("export.copied")
    _fsync_file(partial)
    seen = inspect(partial)
    if seen["integrity"] != "ok":
        raise StoreError(f"exported copy of {source} fails integrity_check: {seen['integrity'][:200]}")
    manifest = {
        "format": MANIFEST_FORMAT,
        "kind": "anima-snapshot",
        "exported_at": now,
        "exported_at_iso": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
        "source": str(source),
        "file": dest.name,
        "file_bytes": partial.stat().st_size,
        "file_sha256": file_sha256(partial),
        "schema_version": seen["schema_version"],
        "sqlite_version": sqlite_module().sqlite_version,
        "integrity": seen["integrity"],
        "contents": seen["summary"],
        "tables": seen["tables"],
    }
    _write_json(pending, manifest)
    _fsync_dir(dest.parent)
    kill_point("export.manifest_written")
    os.replace(partial, dest)
    kill_point("export.replaced")
    os.replace(pending, manifest_path(dest))
    _fsync_dir(dest.parent)
    return manifest


PENDING_MANIFEST_SUFFIX = ".next"


def pending_manifest_path(snapshot: Path) -> Path:
    """The new manifest of an export between its two renames (see _export_into)."""
    mpath = manifest_path(snapshot)
    return mpath.with_name(mpath.name + PENDING_MANIFEST_SUFFIX)


def _export_fault(exc: Exception, dest: Path) -> Exception:
    """One line for what went wrong writing an export: a full disk, a destination we may not write, else as is."""
    if isinstance(exc, AnimaError):
        return exc
    # The backup API's errors carry no SQLite error code here: a driver error on a filesystem with no room
    # left is taken as the full disk it almost surely is.
    full = isinstance(store_fault(exc, dest), StorageFullError) or (
        isinstance(exc, sqlite_module().Error) and disk_is_full(dest))
    if full:
        return StorageFullError(f"no space left on the disk of {dest} for the export; the partial copy was removed "
                                "(an older export there is kept): free space or export elsewhere")
    if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return InputError(f"cannot write the export beside {dest} ({exc.strerror}); give a writable destination")
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (_SQLITE_READONLY, _SQLITE_CANTOPEN):
        return InputError(f"cannot write the export beside {dest} ({exc}); give a writable destination")
    return exc


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SNAPSHOT_MODE))
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    _fsync_file(tmp)
    os.replace(tmp, path)


# ---------------------------------------------------------------- restore


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
        _fsync_file(partial)
        _fsync_dir(target.parent)
        kill_point("restore.verified")
        if target.exists():
            backup = _backup_name(target, stamp)
            _set_aside(target, backup)
        kill_point("restore.backed_up")
        for suffix in SIDE_SUFFIXES:  # a stale WAL must never meet the new file (its content is in the backup)
            Path(str(target) + suffix).unlink(missing_ok=True)
        kill_point("restore.sides_removed")
        os.replace(partial, target)  # the one step that swaps old for new: the path is never empty
        _fsync_dir(target.parent)
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
        _fsync_file(tmp)
        os.replace(tmp, dest)
    _fsync_dir(target.parent)


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


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
