"""Numbered SQL migrations: applied in order, each in its own transaction, recorded in schema_migrations.

A migration never drops or rewrites user rows. A database that has a migration this code does not
know (a newer anima wrote it) is refused rather than guessed at.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

from engine.errors import SchemaTooNewError, StoreError


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")  # 0001_init.sql: version 1, name init


def known_migrations() -> list[Migration]:
    """Every migration shipped with this code, in version order."""
    folder = resources.files("engine.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    return found


def code_schema_version() -> int:
    return known_migrations()[-1].version


def applied_versions(conn: Any) -> set[int]:
    """The migrations a database has; a read only, so it works on a read-only connection (a snapshot)."""
    exists = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()[0]
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")} if exists else set()


def db_schema_version(conn: Any) -> int:
    versions = applied_versions(conn)
    return max(versions) if versions else 0


def check_not_newer(conn: Any) -> None:
    """Refuse a database written by a newer anima: its schema has migrations this code lacks."""
    known = {m.version for m in known_migrations()}
    unknown = sorted(applied_versions(conn) - known)
    if unknown:
        raise SchemaTooNewError(
            f"database schema version {max(unknown)} is newer than this anima understands "
            f"(up to {max(known)}); upgrade anima or restore an older backup"
        )


def migrate(conn: Any, now: float | None = None, *, upto: int | None = None) -> list[int]:
    """Apply every missing migration in order (those up to version `upto` only, when given: tests build an
    older file that way to migrate it onwards); return the versions applied."""
    check_not_newer(conn)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)"
    )
    done = applied_versions(conn)
    applied = []
    for migration in known_migrations():
        if migration.version in done or (upto is not None and migration.version > upto):
            continue
        stamp = time.time() if now is None else now
        conn.execute("BEGIN IMMEDIATE")
        try:
            # executescript would COMMIT first; run statements one by one inside our transaction.
            for statement in _split_statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, stamp),
            )
            conn.execute("COMMIT")
        except Exception as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"migration {migration.version:04d}_{migration.name} failed: {exc}") from exc
        applied.append(migration.version)
    return applied


def _split_statements(sql: str) -> list[str]:
    """Split a migration into complete statements (triggers contain ';' inside BEGIN ... END)."""
    module = _sqlite_complete()
    statements, buffer = [], ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if module(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not buffer.strip().startswith("--"):
        statements.append(buffer.strip())
    return [s for s in statements if _has_code(s)]


def _has_code(statement: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in statement.splitlines())


def _sqlite_complete() -> Any:
    from engine.store.connect import sqlite_module

    return sqlite_module().complete_statement
