"""Using a memory counts: the spaced-repetition step applied to memories a reply actually used."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from engine.memory import ranking
from engine.store.connect import transaction
from engine.store.queries import q


def strengthen(conn: Any, memory_ids: Iterable[int], now: float) -> int:
    """recall_count + 1 and a spaced-repetition step in accessibility for each memory; returns how many.

    Called for what a reply used, never for what a recall merely returned: inspection must not
    change what is found next.
    """
    count = 0
    with transaction(conn):
        for memory_id in dict.fromkeys(memory_ids):
            row = conn.execute(q("mem_strength_of"), {"id": memory_id}).fetchone()
            if row is None:
                continue
            last = row["last_recalled_at"] or row["ts"]
            gap_days = max(0.0, now - last) / ranking.DAY_S
            strength = ranking.strength_after_recall(row["accessibility"], gap_days)
            if math.isfinite(strength):
                conn.execute(q("mem_bump_recall"), {"id": memory_id, "accessibility": strength, "now": now})
                count += 1
    return count
