"""Her file as a command meets it: opened for writing (checked, migrated), read-only, or new; its daemon lock.

The CLI and the API reach engine/store only through engine/usecases (tests/test_layering.py); these
are the file-level steps every command shares, so no transport opens SQLite or takes a lock by itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.errors import AnimaError, StoreError
from engine.store import code_schema_version, connect, db_schema_version, driver_name, migrate
from engine.store.connect import driver_error, transaction
from engine.store.core import set_companion_handle
from engine.store.lock import DaemonLock, check_one_name, is_locked
from engine.store.migrate import check_not_newer

__all__ = ["DaemonLock", "copy_into_new", "daemon_running", "fault_of", "open_new", "open_readonly", "open_scratch",
           "open_for_writing", "schema_versions", "set_handle", "sqlite_driver"]


def open_for_writing(db_path: Path, *, create: bool = True) -> Any:
    """Open (and migrate) her file for a command that may write; works whether or not the daemon runs (WAL)."""
    if not create and not db_path.exists():
        raise StoreError(f"database {db_path} does not exist; create it with: anima init (or anima run)")
    check_one_name(db_path)  # a second hard link would give this writer a WAL of its own
    conn = connect(db_path)
    check_not_newer(conn)
    migrate(conn)
    return conn


def open_readonly(db_path: Path) -> Any:
    """Her file for reading only: nothing migrated, nothing written (a daemon may be serving her)."""
    return connect(db_path, readonly=True)


def open_new(path: Path | str, now: float | None = None) -> Any:
    """A new file (created private) or ":memory:", migrated to this code's schema (`now`: the migrations' time)."""
    conn = connect(path)
    try:
        migrate(conn, now=now)
    except BaseException:
        conn.close()
        raise
    return conn


def copy_into_new(conn: Any, target: Path) -> None:
    """Copy the whole database `conn` into the new file `target` (created private, like every database file)."""
    dest = connect(target)
    try:
        conn.backup(dest)
    finally:
        dest.close()


def open_scratch(now: float) -> Any:
    """A migrated database in RAM (a simulation's run): nothing of it reaches a disk unless copied."""
    return open_new(":memory:", now)


def set_handle(conn: Any, handle: str) -> None:
    """Record, in one transaction, the id she is served under in a companions directory."""
    with transaction(conn):
        set_companion_handle(conn, handle)


def daemon_running(db_path: Path) -> bool:
    """True when a daemon (or a restore) holds her file's lock."""
    return is_locked(db_path)


def fault_of(exc: BaseException, db: str | Path = "") -> AnimaError | None:
    """What a driver exception means as one line (a full disk, a damaged file), or None for a bug."""
    return driver_error(exc, db)


def schema_versions(conn: Any) -> tuple[int, int]:
    """(her file's schema version, this code's)."""
    return db_schema_version(conn), code_schema_version()


def sqlite_driver() -> str:
    """Which driver and SQLite version the store uses ('pysqlite3 3.51.1')."""
    return driver_name()
