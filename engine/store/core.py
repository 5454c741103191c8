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


def set_companion_handle(conn: Any, handle: str) -> None:
    """Record the id she is served under in a companions directory (engine/store/migrations/0014)."""
    conn.execute(q("set_companion_handle"), {"handle": handle})


def set_companion_home(conn: Any, home_city: str, home_tz: str, work_role: str) -> None:
    """Record where she lives and what she does (engine/store/migrations/0016); the caller validated them."""
    conn.execute(q("set_companion_home"), {"home_city": home_city, "home_tz": home_tz, "work_role": work_role})


def log_event(conn: Any, now: float, kind: str, **detail: Any) -> None:
    """Append one lifecycle event (never chat or life text: ids, lengths, counts)."""
    conn.execute(q("insert_event"), {"ts": now, "kind": kind, "detail_json": json.dumps(detail, ensure_ascii=False)})


def events(conn: Any, kind: str) -> list[dict[str, Any]]:
    rows = conn.execute(q("events_of_kind"), {"kind": kind}).fetchall()
    return [{**dict(r), "detail": json.loads(r["detail_json"])} for r in rows]


def daemon_state(conn: Any) -> dict[str, Any] | None:
    row = conn.execute(q("get_daemon_state")).fetchone()
    return dict(row) if row else None


def daemon_started(conn: Any, pid: int, now: float, wall: float) -> None:
    """This run's daemon_state row: started now, not stopped (inside the caller's start transaction)."""
    conn.execute(q("daemon_started"), {"pid": pid, "now": now, "wall": wall})


def daemon_beat(conn: Any, now: float, wall: float, lag_ms: float) -> None:
    """The last beat (her time and the wall clock) and its loop lag: what the next start measures a gap from."""
    conn.execute(q("daemon_beat"), {"now": now, "wall": wall, "lag_ms": lag_ms})


def daemon_stopped(conn: Any, now: float, wall: float) -> None:
    """A clean stop mark (inside the caller's stop transaction, with its event)."""
    conn.execute(q("daemon_stopped"), {"now": now, "wall": wall})


def stored_controls(conn: Any) -> dict[str, Any]:
    """The values set in life_control, under their current names (an old name's row counts as its new name's
    unless that one is set too; keys unknown to this version are ignored, not fatal)."""
    rows = {row["key"]: json.loads(row["value_json"]) for row in conn.execute(q("all_controls"))}
    values: dict[str, Any] = {}
    for key in sorted(rows, key=lambda k: k in control.REGISTRY):  # old names first: a current name wins
        if key in control.REGISTRY or key in control.ALIASES:
            values[control.canonical(key)] = rows[key]
    return values


def read_switches(conn: Any) -> control.Switches:
    """Every switch's effective value, typed: read once per transaction and passed down."""
    return control.Switches.from_stored(stored_controls(conn))


def controls(conn: Any) -> dict[str, Any]:
    """The legacy dict view (current names plus old aliases) for readers not yet converted to Switches."""
    return read_switches(conn).legacy()


def set_control(conn: Any, key: str, value: Any, now: float, actor: str = "cli") -> tuple[Any, Any]:
    """Validate and write one switch, with its event_log record, in one transaction; return (old, new).

    An old name is written under its current name (the event records the name used as `alias`)."""
    control.check_value(key, value)
    name = control.canonical(key)
    alias = {"alias": key} if key != name else {}
    with transaction(conn):
        old = read_switches(conn).value(name)
        conn.execute(q("upsert_control"), {"key": name, "value_json": json.dumps(value), "now": now})
        log_event(conn, now, "control", key=name, old=old, new=value, actor=actor, **alias)
    return old, value
