"""Accessors of the operator's reads of the file itself (ops.sql): integrity, the catalogue and summary a snapshot records.

engine/snapshot.py (export, restore) and `anima doctor` ask these questions of a database file,
which may be a snapshot of an older schema: the summary reads return their defaults when a table
is missing. The event_log tail of ops.sql is engine/store/oplog.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from engine.store.queries import q


def integrity_problems(conn: Any) -> list[str]:
    """`PRAGMA integrity_check` (pages and index contents): ["ok"] when sound, else one line per problem."""
    return [str(row[0]) for row in conn.execute(q("integrity_check")).fetchall()]


def quick_check(conn: Any) -> list[Any]:
    """`PRAGMA quick_check` (pages only, fast): ["ok"] when sound."""
    return [row[0] for row in conn.execute(q("quick_check"))]


def clock_steps_since(conn: Any, after_event_id: int) -> list[dict[str, Any]]:
    """The wall-clock steps (ts, kind, detail) the daemon recorded after one event_log id, oldest first."""
    rows = conn.execute(q("clock_events_since"), {"after_id": after_event_id})
    return [{"ts": row["ts"], "kind": row["kind"], "detail": json.loads(row["detail_json"])} for row in rows]


# ---------------------------------------------------------------- the catalogue


def quote_identifier(name: str) -> str:
    """`name` as an SQL identifier (double quotes, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def ordinary_tables(conn: Any) -> list[str]:
    """Every ordinary table by name (shadow tables of FTS5/vec0 included), virtual tables and sqlite_* excluded."""
    rows = conn.execute(q("snapshot_tables")).fetchall()
    return [r[0] for r in rows if not (r[1] or "").lstrip().upper().startswith("CREATE VIRTUAL TABLE")]


def _order_by(conn: Any, table: str) -> str:
    """The primary key columns; every column for a WITHOUT ROWID table without one; else rowid."""
    info = conn.execute(q("snapshot_table_columns"), {"table": table}).fetchall()
    pk = sorted((r[5], r[1]) for r in info if r[5])
    without_rowid = conn.execute(q("snapshot_table_sql"), {"name": table}).fetchone()[0].upper().replace(
        " ", "").endswith("WITHOUTROWID")
    if pk:
        return ", ".join(quote_identifier(name) for _, name in pk)
    if without_rowid:
        return ", ".join(quote_identifier(r[1]) for r in info)
    return "rowid"


def rows_by_key(conn: Any, table: str) -> Iterator[Any]:
    """Every row of one table in primary-key order (a stable order to hash), streamed."""
    # The one composed statement: a table name and its key columns cannot be bound parameters; both come
    # from the file's own catalogue (sqlite_master, pragma_table_info) and are quoted as identifiers.
    return iter(conn.execute(q("snapshot_table_rows").format(table=quote_identifier(table),
                                                             order_by=_order_by(conn, table))))


# ---------------------------------------------------------------- the summary (what the file holds)


def _row_or_defaults(conn: Any, sql: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """One summary row as a dict; `defaults` when the table is missing (an older schema) or a value is NULL."""
    try:
        row = conn.execute(sql).fetchone()
    except Exception:  # a table this schema version lacks
        return dict(defaults)
    if row is None:
        return dict(defaults)
    return {key: default if row[key] is None else row[key] for key, default in defaults.items()}


def companion_label(conn: Any) -> Any:
    """Her (name, birth_local, birth_tz, birth_place, chart_json), or None before she exists."""
    return conn.execute(q("snapshot_companion")).fetchone()


def current_activity_label(conn: Any) -> Any:
    """What she is doing (kind, label, started_at), or None."""
    return conn.execute(q("snapshot_activity")).fetchone()


def mood_json(conn: Any) -> str | None:
    """Her stored mood state (JSON text), or None."""
    value: str | None = _row_or_defaults(conn, q("snapshot_mood"), {"state_json": None})["state_json"]
    return value


def life_counts(conn: Any) -> dict[str, Any]:
    """Her life events: how many, how many told, the newest time (counts only: no text)."""
    return _row_or_defaults(conn, q("snapshot_life"), {"events": 0, "told": 0, "last_ts": None})


def chat_counts(conn: Any) -> dict[str, Any]:
    """Chat messages, distinct turns, the newest message time."""
    return _row_or_defaults(conn, q("snapshot_chats"), {"messages": 0, "turns": 0, "last_ts": None})


def memory_counts(conn: Any) -> dict[str, Any]:
    """Episodic memories, and how many wait for consolidation."""
    return _row_or_defaults(conn, q("snapshot_memories"), {"episodic": 0, "unconsolidated": 0})


def fact_counts(conn: Any) -> dict[str, Any]:
    """Facts still valid, and all ever recorded."""
    return _row_or_defaults(conn, q("snapshot_facts"), {"active": 0, "all": 0})


def relation_counts(conn: Any) -> dict[str, Any]:
    """Relational entries still active, and all ever recorded."""
    return _row_or_defaults(conn, q("snapshot_relations"), {"active": 0, "all": 0})


# ---------------------------------------------------------------- journal mode


def use_rollback_journal(conn: Any) -> None:
    """One self-contained file, no -wal or -shm beside it (a snapshot, a restored copy being written)."""
    conn.execute(q("journal_mode_delete"))


def use_wal(conn: Any) -> None:
    """Back to WAL, the mode the daemon runs the file in."""
    conn.execute(q("journal_mode_wal"))


def checkpoint_truncate(conn: Any) -> bool:
    """Copy the WAL's committed frames into the file and cut the WAL to zero bytes; False when a reader
    (another process) kept some frames from being copied."""
    return bool(conn.execute(q("restore_checkpoint")).fetchone()[0] == 0)
