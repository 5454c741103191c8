"""Forget turns everywhere they live (engine/memory/forget.py), and bring this process's vector cache in line.

The one deletion anima allows, called by DELETE /v1/turns and by `anima forget` when no daemon holds
the file. The forget itself is one transaction and the WAL truncation after it; the RAM vector index
of this process outlives both, so it is dropped here (its stamp already includes the forget
generation; dropping it frees the forgotten rows' memory at once). The daemon's indexer watermark is
process state of the daemon and is adjusted by its route.
"""

from __future__ import annotations

from typing import Any

from engine.memory import forget as forgetting
from engine.memory import vector_index
from engine.settings import LifeSettings


def forget_turns(conn: Any, chosen: forgetting.Selection, now: float, *, actor: str,
                 tz: str = LifeSettings.tz) -> forgetting.ForgetReport:
    """`tz`: her zone, the one rewritten facts are dated in (as consolidation dates them)."""
    report = forgetting.forget(conn, chosen, now, actor=actor, tz=tz)
    vector_index.forget(conn)
    return report
