"""Read her state: mood, energy and activity, her switches and the store's counts, read together (nothing is written)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import inner
from engine.control import Switches
from engine.persona import Persona
from engine.settings import Settings
from engine.store.api import state_counts
from engine.store.core import read_switches


@dataclass(frozen=True)
class StateRead:
    snapshot: dict[str, Any]  # engine.inner.inner_snapshot: mood, energy, activity (never life-event text)
    switches: Switches
    counts: dict[str, int]


def read_state(conn: Any, settings: Settings, persona: Persona | None, now: float) -> StateRead:
    """How she is now, her switches and the counts; reads only (no write transaction, no write lock)."""
    return StateRead(snapshot=inner.inner_snapshot(conn, settings, persona, now), switches=read_switches(conn),
                     counts=state_counts(conn))
