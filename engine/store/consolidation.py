"""Accessors of a consolidation pass's bookkeeping: the episodes it reads and marks, and the model operator's budget.

The facts and relational entries it writes have their own accessors (engine/store/facts.py,
relations.py); these are the rest of consolidate.sql. Transactions are the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.store.queries import q


def unconsolidated_episodes(conn: Any, limit: int) -> list[Any]:
    """Up to `limit` episodes not yet consolidated, oldest first, with what the gate needs."""
    return list(conn.execute(q("unconsolidated_episodes"), {"limit": limit}).fetchall())


def episode_vectors(conn: Any, episode_ids: Sequence[int]) -> dict[int, bytes]:
    """episode id -> its stored passage vector (float32 bytes), for the ids that have one."""
    return {int(row["id"]): row["embedding"]
            for row in conn.execute(q("episode_vectors"), {"ids": json.dumps(list(episode_ids))})}


def mark_consolidated(conn: Any, episode_ids: Sequence[int], now: float) -> None:
    """Mark the episodes looked at by this pass (those already marked keep their time)."""
    conn.execute(q("mark_consolidated"), {"ids": json.dumps(list(episode_ids)), "now": now})


def model_usage(conn: Any, day: str) -> tuple[int, int]:
    """(calls, tokens) the model operator spent on one UTC day ("YYYY-MM-DD"); (0, 0) before the first."""
    row = conn.execute(q("get_model_usage"), {"day": day}).fetchone()
    return (int(row["calls"]), int(row["tokens"])) if row else (0, 0)


def add_model_usage(conn: Any, day: str, calls: int, tokens: int, now: float) -> None:
    """Add calls and tokens to one UTC day's model spend."""
    conn.execute(q("add_model_usage"), {"day": day, "calls": calls, "tokens": tokens, "now": now})
