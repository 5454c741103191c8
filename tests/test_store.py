"""Storage: connect, migrations in order and recorded, newer schema refused, immutable rows stay immutable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.errors import StoreError
from engine.store import code_schema_version, connect, db_schema_version, migrate
from engine.store.core import log_event
from engine.store.migrate import known_migrations


def test_connect_loads_sqlite_vec_and_fts5_in_wal_mode(db_path: Path) -> None:
    conn = connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")


def test_migrations_apply_in_order_once_and_are_recorded(db_path: Path) -> None:
    conn = connect(db_path)
    applied = migrate(conn)
    assert applied == [m.version for m in known_migrations()]
    assert applied == sorted(applied)
    assert migrate(conn) == []
    assert db_schema_version(conn) == code_schema_version()
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert [r[0] for r in rows] == applied


def test_database_from_a_newer_anima_is_refused(db_path: Path) -> None:
    conn = connect(db_path)
    migrate(conn)
    conn.execute("INSERT INTO schema_migrations VALUES (9999, 'future', 0)")
    with pytest.raises(StoreError, match="newer than this anima"):
        migrate(conn)


def test_migrations_never_drop_tables() -> None:
    # One exception, SQLite's own way to change a CHECK: a rebuild that drops a table only to create it
    # again under its name and copy every row back, and drops the scratch copy it made for that
    # (tests/test_job_status.py checks 0008's rows survive).
    for migration in known_migrations():
        sql = migration.sql.upper()
        for table in re.findall(r"DROP TABLE (?:IF EXISTS )?(\w+)", sql):
            rebuilt = f"CREATE TABLE {table} (" in sql and f"INSERT INTO {table} " in sql
            scratch = f"CREATE TABLE {table} AS SELECT" in sql
            assert rebuilt or scratch, f"{migration.name} drops {table}"
        assert "DELETE FROM" not in sql, migration.name


def test_birth_row_cannot_be_updated_or_deleted_through_sql(db_path: Path) -> None:
    conn = connect(db_path)
    migrate(conn)
    conn.execute(
        "INSERT INTO companion (id, name, birth_local, birth_tz, birth_utc, bazi_sect, chart_json, created_at) "
        "VALUES (1, '小安', '1990-08-15 08:30', 'Asia/Shanghai', 0, 2, '{}', 0)"
    )
    for statement in (
        "UPDATE companion SET birth_local = '1991-01-01 00:00'",
        "UPDATE companion SET chart_json = '{\"x\": 1}'",
        "UPDATE companion SET birth_tz = 'UTC'",
        "DELETE FROM companion",
    ):
        with pytest.raises(Exception, match="immutable"):
            conn.execute(statement)
    assert conn.execute("SELECT birth_local FROM companion").fetchone()[0] == "1990-08-15 08:30"


def test_event_log_is_append_only(db_path: Path) -> None:
    conn = connect(db_path)
    migrate(conn)
    log_event(conn, 1.0, "start", pid=1)
    with pytest.raises(Exception, match="append-only"):
        conn.execute("UPDATE event_log SET kind = 'x'")
    with pytest.raises(Exception, match="append-only"):
        conn.execute("DELETE FROM event_log")
