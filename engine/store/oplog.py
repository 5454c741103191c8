"""Operator writes in event_log: what the CLI records when it changes her file, and the tail the daemon logs.

A CLI process and the daemon share the SQLite file but not a log: the CLI records each write it
makes as an event (ids, counts, switch values; never chat or life text), and the running daemon
logs every new event of those kinds once, under the same name whoever made it, on its next beat.
"""

from __future__ import annotations

import json
from typing import Any

from engine import control
from engine.store.connect import transaction
from engine.store.core import controls, log_event, stored_controls
from engine.store.queries import q

# event_log kind -> the one log event name it is logged under, whatever the source (CLI or API).
WRITE_EVENTS: dict[str, str] = {
    "control": control.CHANGED_EVENT,
    "ingest": "history.ingested",
    "life_add": "life.added",
    "consolidate": "consolidation.ran",
    "restore": "store.restored",
}


def record_write(conn: Any, now: float, kind: str, actor: str, **detail: Any) -> None:
    """One event for a write the CLI (or another actor) made; `detail` holds ids and counts only."""
    if kind not in WRITE_EVENTS:
        raise ValueError(f"unknown write kind {kind!r}")
    log_event(conn, now, kind, actor=actor, **detail)


def reset_control(conn: Any, key: str, now: float, actor: str = "cli") -> tuple[Any, Any]:
    """Drop the stored value of `key` (its default applies again), with its event; return (old, new).

    An old name resets its current name; a row left under the old name goes too, or it would apply again."""
    spec = control.spec_of(key)
    alias = {"alias": key} if key != spec.name else {}
    with transaction(conn):
        old = controls(conn)[spec.name]
        was_set = spec.name in stored_controls(conn)
        for stored_key in (spec.name, *spec.aliases):
            conn.execute(q("delete_control"), {"key": stored_key})
        log_event(conn, now, "control", key=spec.name, old=old, new=spec.default, actor=actor, reset=True,
                  was_set=was_set, **alias)
    return old, spec.default


def last_event_id(conn: Any) -> int:
    return int(conn.execute(q("last_event_id")).fetchone()["id"])


def start_cursor(conn: Any) -> int:
    """Where a starting daemon's log tail begins, called after this run's `start` event is written.

    On the file's first start: at the beginning. After a clean stop: at that stop, so writes made while the daemon was down (an ingest, a switch)
    are logged once now. After a crash: at the newest event, since the crashed run may already have
    logged its last writes and a duplicate line is worse than none.
    """
    rows = conn.execute(q("last_lifecycle_events")).fetchall()
    if len(rows) == 1:  # this is the file's first daemon: everything the CLI did before it is new
        return 0
    if len(rows) == 2 and rows[0]["kind"] == "start" and rows[1]["kind"] == "stop":
        cursor = int(rows[1]["id"])
    else:
        cursor = last_event_id(conn)
    # A restore replaces the file while no daemon runs (it holds the lock), after the snapshot's own
    # last run: that run's crash or clean stop says nothing about the restore, which is always new.
    restored = conn.execute(q("last_restore_event")).fetchone()
    if restored is not None and len(rows) == 2 and restored["id"] > rows[1]["id"]:
        cursor = min(cursor, int(restored["id"]) - 1)
    return cursor


def writes_after(conn: Any, after: int, limit: int = 500) -> list[dict[str, Any]]:
    """Events newer than `after` (all kinds, so the cursor advances); `name` is set for write kinds."""
    rows = conn.execute(q("events_after"), {"after": after, "limit": limit}).fetchall()
    return [{"id": r["id"], "kind": r["kind"], "name": WRITE_EVENTS.get(r["kind"]),
             "detail": json.loads(r["detail_json"])} for r in rows]
