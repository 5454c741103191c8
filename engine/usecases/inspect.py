"""Her file read for an operator (`anima status`, `anima doctor`): who she is, her daemon's last record, soundness.

Nothing here writes: these are the reads the inspection commands show, so those commands reach no
engine.store of their own (tests/test_layering.py).
"""

from __future__ import annotations

from typing import Any

from engine.store.core import daemon_state, events, get_companion, read_switches
from engine.store.ops import clock_steps_since, quick_check
from engine.store.schema import foreign_objects

__all__ = ["clock_steps_since_start", "companion_of", "daemon_record", "foreign_objects", "integrity",
           "start_events", "switch_values"]


def companion_of(conn: Any) -> dict[str, Any] | None:
    """Her companion row (name, chart, birth), None before `anima init`."""
    return get_companion(conn)


def daemon_record(conn: Any) -> dict[str, Any]:
    """What her daemon last wrote of itself (pid, beats, last beat at, loop lag); empty before its first start."""
    return daemon_state(conn) or {}


def start_events(conn: Any) -> list[dict[str, Any]]:
    """Every `start` event, oldest first, with its detail (mode, beat, socket, handle)."""
    return events(conn, "start")


def clock_steps_since_start(conn: Any) -> list[dict[str, Any]]:
    """The wall-clock steps the daemon recorded since its last start, oldest first."""
    starts = start_events(conn)
    return clock_steps_since(conn, starts[-1]["id"] if starts else 0)


def integrity(conn: Any) -> list[Any]:
    """`PRAGMA quick_check`: ["ok"] when the pages are sound, else the problems."""
    return quick_check(conn)


def switch_values(conn: Any) -> dict[str, Any]:
    """Every switch's value as `anima status` shows it: current names, and old ones beside them."""
    return read_switches(conn).legacy()
