"""Read her state: mood, energy, activity, switches and counts; who she is; and whether the store answers (reads only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import inner
from engine.control import Switches
from engine.memory.indexer import count_pending
from engine.persona import Persona
from engine.settings import Settings
from engine.store.api import probe, state_counts
from engine.store.core import get_companion, read_switches
from engine.store.migrate import db_schema_version


@dataclass(frozen=True)
class StateRead:
    snapshot: dict[str, Any]  # engine.inner.inner_snapshot: mood, energy, activity (never life-event text)
    switches: Switches
    counts: dict[str, int]


def read_state(conn: Any, settings: Settings, persona: Persona | None, now: float) -> StateRead:
    """How she is now, her switches and the counts; reads only (no write transaction, no write lock)."""
    return StateRead(snapshot=inner.inner_snapshot(conn, settings, persona, now), switches=read_switches(conn),
                     counts=state_counts(conn))


def read_companion(conn: Any) -> dict[str, Any] | None:
    """Her companion row (name, birth facts, chart, persona); None before `anima init`."""
    return get_companion(conn)


def health_check(conn: Any, indexer: Any) -> tuple[int, int]:
    """(schema version, memories waiting for a vector): above the indexer's watermark, or all without one."""
    probe(conn)
    pending = indexer.pending(conn) if indexer is not None else count_pending(conn)
    return db_schema_version(conn), pending
