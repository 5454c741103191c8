"""Open the one SQLite file with WAL, foreign keys, a busy timeout, sqlite-vec and FTS5.

Some Python builds (this machine's among them) compile the stdlib `sqlite3` without
`enable_load_extension`; sqlite-vec is a loadable extension, so we fall back to `pysqlite3`
(the `pysqlite3-binary` wheel on Linux), which bundles a recent SQLite with extension loading.
"""

from __future__ import annotations

import errno
import importlib
import os
import sqlite3 as _stdlib_sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlite_vec

from engine.errors import AnimaError, ConfigError, DamagedStoreError, StorageFullError, StoreError
from engine.store.lookaside import disable_lookaside

BUSY_TIMEOUT_MS = 5000
# New database files (and so their -wal/-shm, which SQLite creates with the database's mode) are
# 0640 whatever the umask: her chats are not for other users of the machine; a group (the unit's
# `anima` group) may read them for backups. A stricter umask still narrows this.
DB_FILE_MODE = 0o640
SQLITE_HEADER = b"SQLite format 3\x00"
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26
FULL_BELOW_BYTES = 64 * 1024  # less free space than this next to the database counts as full
STORAGE_FULL_MESSAGE = ("the disk holding the database {db} is full: writes are refused until space is freed "
                        "(reads go on); free space on that filesystem and the daemon recovers by itself")


def _can_load_extensions(module: ModuleType) -> bool:
    return hasattr(module.Connection, "enable_load_extension")


def sqlite_module() -> ModuleType:
    """The DB-API module in use: stdlib `sqlite3` when it can load extensions, else `pysqlite3.dbapi2`."""
    if _can_load_extensions(_stdlib_sqlite3):
        return _stdlib_sqlite3
    try:
        module = importlib.import_module("pysqlite3.dbapi2")
    except ImportError as exc:
        raise StoreError(
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed; "
            "install it with: pip install pysqlite3-binary"
        ) from exc
    return module


def driver_name() -> str:
    """'sqlite3 3.45.1' or 'pysqlite3 3.51.1': which driver and SQLite version `connect()` uses."""
    module = sqlite_module()
    name = "sqlite3" if module is _stdlib_sqlite3 else "pysqlite3"
    return f"{name} {module.sqlite_version}"


def connect(path: str | Path, *, readonly: bool = False, check_same_thread: bool = True,
            cache_kib: int | None = None, lookaside: bool = True) -> Any:
    """Open `path` ready for anima: WAL, synchronous=NORMAL, foreign keys, busy timeout, sqlite-vec loaded.

    Transactions are explicit (`isolation_level=None`): every multi-step write is one
    `with transaction(conn):` block, named for what it does. `cache_kib` caps this connection's
    page cache (`PRAGMA cache_size = -KiB`); None keeps SQLite's default (2 MB). One process serving
    a thousand files holds a thousand connections, and the default would let them keep up to 2 GB.
    `lookaside=False` turns SQLite's per-connection small-allocation pool off (engine/store/lookaside.py:
    32 KiB less each, for the same reason; where the handle cannot be verified the pool stays).
    """
    if cache_kib is not None and (isinstance(cache_kib, bool) or not isinstance(cache_kib, int) or cache_kib < 0):
        raise ConfigError(f"the page cache size of a connection must be a whole number of KiB >= 0, got {cache_kib!r}")
    module = sqlite_module()
    in_memory = str(path) == ":memory:"  # SQLite's name for a private in-RAM database: no file to check or create
    path = Path(path)
    if not in_memory:
        check_file(path)
    created = False
    if readonly:
        if not path.exists():
            raise StoreError(f"database {path} does not exist; create it with: anima init")
        uri = f"file:{path}?mode=ro"
        conn = module.connect(uri, uri=True, isolation_level=None, check_same_thread=check_same_thread)
    else:
        if not in_memory:
            path.parent.mkdir(parents=True, exist_ok=True)
            created = _create_private(path)
        conn = module.connect(str(path), isolation_level=None, check_same_thread=check_same_thread)
    if not lookaside and not in_memory:
        disable_lookaside(conn, path)  # before the first statement: the pool cannot change while in use
    try:
        conn.row_factory = module.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if cache_kib is not None:
            conn.execute(f"PRAGMA cache_size = {-cache_kib}")  # negative: a size in KiB, not in pages
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except Exception as exc:  # a truncated or damaged file fails here, at its first read
        conn.close()
        if not readonly and created and path.stat().st_size == 0:
            path.unlink()  # ours and still empty (a full disk): leave no empty file to be refused next time
        fault = store_fault(exc, path)
        if fault is not None:
            raise fault from None
        raise
    return conn


def check_file(path: Path) -> None:
    """Refuse, with one line, a file that exists but is not an SQLite database (empty, text, random bytes).

    SQLite itself would treat an empty file as a new database (a fresh demo companion silently
    replacing hers) and report the others only at the first read, as a bare DatabaseError.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise DamagedStoreError(f"database {path} is a directory, not a database file; pass the file's path") from None
    except PermissionError:
        raise StoreError(f"database {path} cannot be read by this user (uid {os.geteuid()}); "
                         "run as the file's owner or fix its ownership") from None
    if not head:
        raise DamagedStoreError(
            f"database {path} is an empty file (0 bytes), not her database; to start a new companion remove it "
            f"(rm {path}) and run again; to bring hers back: anima restore SNAPSHOT")
    if head != SQLITE_HEADER:
        raise DamagedStoreError(
            f"database {path} is not an SQLite database (its first bytes are not the SQLite header); "
            "check --db / [database] path, or restore a snapshot: anima restore SNAPSHOT")


def _create_private(path: Path) -> bool:
    """Create a missing database file as DB_FILE_MODE before SQLite does (SQLite would make it 0644 & ~umask);
    True when this call created it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, DB_FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def store_fault(exc: BaseException, db: str | Path = "") -> AnimaError | None:
    """The one mapping from a driver or OS error to a storage state: disk full, damaged file; None otherwise.

    SQLITE_FULL and ENOSPC/EDQUOT become StorageFullError (503 storage_full, exit 1);
    SQLITE_CORRUPT and SQLITE_NOTADB become DamagedStoreError (exit 2).
    """
    if isinstance(exc, AnimaError):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFullError(STORAGE_FULL_MESSAGE.format(db=db or "(unknown)"))
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = int(code) & 0xFF
    if primary == _SQLITE_FULL or (primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN) and disk_is_full(db)):
        # SQLite reports ENOSPC as SQLITE_FULL when a page write fails, but as an I/O error when
        # growing its -shm or creating a side file fails; the filesystem's free space tells them apart.
        return StorageFullError(STORAGE_FULL_MESSAGE.format(db=db or "(unknown)"))
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return DamagedStoreError(
            f"database {db or '(unknown)'} is damaged ({getattr(exc, 'sqlite_errorname', 'corrupt')}: {exc}); "
            "stop the daemon and restore a snapshot: anima restore SNAPSHOT")
    return None


def disk_is_full(db: str | Path) -> bool:
    """Whether the filesystem holding `db` has (almost) no space left for this user."""
    if not db:
        return False
    folder = Path(db).parent
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < FULL_BELOW_BYTES


def driver_error(exc: BaseException, db: str | Path = "") -> AnimaError | None:
    """store_fault, else any other SQLite error as one StoreError line (for the CLI: no traceback)."""
    fault = store_fault(exc, db)
    if fault is not None:
        return fault
    if getattr(exc, "sqlite_errorcode", None) is not None or isinstance(exc, _stdlib_sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", type(exc).__name__)
        return StoreError(f"database {db or '(unknown)'}: {exc} ({name}); check the file, its directory and the disk")
    return None


def quick_check(conn: Any, path: str | Path) -> None:
    """`PRAGMA quick_check` (pages, freelists, record formats; no index cross-check): raise
    DamagedStoreError naming the first problem. Run at start, so a damaged file is refused before
    she writes into it."""
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
    except Exception as exc:
        fault = store_fault(exc, path)
        if isinstance(fault, DamagedStoreError):
            raise fault from None
        raise
    if rows != ["ok"]:
        raise DamagedStoreError(
            f"database {path} fails PRAGMA quick_check ({'; '.join(rows)[:200]}); it is damaged: stop here and "
            "restore a snapshot (anima restore SNAPSHOT); the damaged file is left untouched")


def database_file(conn: Any) -> str | None:
    """The file behind `conn`'s main database, or None for an in-memory one: the key of per-file caches."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return str(row[2]) or None
    return None


class transaction:
    """`with transaction(conn):` runs the block in one BEGIN IMMEDIATE ... COMMIT, rolling back on error.

    IMMEDIATE takes the write lock up front, so two writers queue on busy_timeout instead of
    failing half-way with SQLITE_BUSY on lock upgrade. Nested use joins the outer transaction.
    """

    def __init__(self, conn: Any):
        self.conn = conn
        self.outer = False

    def __enter__(self) -> Any:
        if self.conn.in_transaction:
            self.outer = True
            return self.conn
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.outer:
            return
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")
