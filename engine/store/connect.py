"""Open the one SQLite file with WAL, foreign keys, a busy timeout, sqlite-vec and FTS5.

Some Python builds (this machine's among them) compile the stdlib `sqlite3` without
`enable_load_extension`; sqlite-vec is a loadable extension, so we fall back to `pysqlite3`
(the `pysqlite3-binary` wheel on Linux), which bundles a recent SQLite with extension loading.
"""

from __future__ import annotations

import importlib
import sqlite3 as _stdlib_sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlite_vec

from engine.errors import StoreError

BUSY_TIMEOUT_MS = 5000


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


def connect(path: str | Path, *, readonly: bool = False, check_same_thread: bool = True) -> Any:
    """Open `path` ready for anima: WAL, synchronous=NORMAL, foreign keys, busy timeout, sqlite-vec loaded.

    Transactions are explicit (`isolation_level=None`): every multi-step write is one
    `with transaction(conn):` block, named for what it does.
    """
    module = sqlite_module()
    path = Path(path)
    if readonly:
        if not path.exists():
            raise StoreError(f"database {path} does not exist; create it with: anima init")
        uri = f"file:{path}?mode=ro"
        conn = module.connect(uri, uri=True, isolation_level=None, check_same_thread=check_same_thread)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = module.connect(str(path), isolation_level=None, check_same_thread=check_same_thread)
    conn.row_factory = module.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


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
