"""A command's write, noted for the daemon: one event_log row (ids and counts, never text) it logs as its own.

A CLI command that changes her file leaves this row in the same transaction as its write (or right
after it), so the daemon's log says what the operator did (engine/store/oplog.py lists the kinds).
"""

from __future__ import annotations

from typing import Any

from engine.store.oplog import record_write


def note_cli_write(conn: Any, now: float, kind: str, **counts: Any) -> None:
    """Record the CLI's write of `kind` (ingest, consolidate, life_add, ...) with its ids and counts."""
    record_write(conn, now, kind, actor="cli", **counts)
