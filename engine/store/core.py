"""Accessors for the core tables: companion, event_log, daemon_state and life_control."""

from __future__ import annotations

import json
from typing import Any

from engine import control
from engine.store.connect import transaction
from engine.store.queries import q


def get_companion(conn: Any) -> dict[str, Any] | None:
    row = conn.execute(q("get_companion")).fetchone()
    if row is None:
        return None
    record = dict(row)
    record["chart"] = json.loads(record.pop("chart_json"))
    record["persona"] = json.loads(record.pop("persona_json"))
    return record


def insert_companion(conn: Any, **fields: Any) -> None:
    conn.execute(q("insert_companion"), fields)


def log_event(conn: Any, now: float, kind: str, **detail: Any) -> None:
    """Append one lifecycle event (never chat or life text: ids, lengths, counts)."""
    conn.execute(q("insert_event"), {"ts": now, "kind": kind, "detail_json": json.dumps(detail, ensure_ascii=False)})


def events(conn: Any, kind: str) -> list[dict[str, Any]]:
    rows = conn.execute(q("events_of_kind"), {"kind": kind}).fetchall()
    return [{**dict(r), "detail": json.loads(r["detail_json"])} for r in rows]


def daemon_state(conn: Any) -> dict[str, Any] | None:
    row = conn.execute(q("get_daemon_state")).fetchone()
    return dict(row) if row else None


def stored_controls(conn: Any) -> dict[str, Any]:
    """The values set in life_control (keys unknown to this version are ignored, not fatal)."""
    values = {}
    for row in conn.execute(q("all_controls")):
        if row["key"] in control.REGISTRY:
            values[row["key"]] = json.loads(row["value_json"])
    return values


def controls(conn: Any) -> dict[str, Any]:
    return control.effective(stored_controls(conn))


def set_control(conn: Any, key: str, value: Any, now: float, actor: str = "cli") -> tuple[Any, Any]:
    """Validate and write one switch, with its event_log record, in one transaction; return (old, new)."""
    control.check_value(key, value)
    with transaction(conn):
        old = controls(conn)[key]
        conn.execute(q("upsert_control"), {"key": key, "value_json": json.dumps(value), "now": now})
        log_event(conn, now, "control", key=key, old=old, new=value, actor=actor)
    return old, value
