"""Forget turns everywhere they live (engine/memory/forget.py), and bring this process's vector cache in line.

The one deletion anima allows, called by DELETE /v1/turns and by `anima forget` when no daemon holds
the file. The nightly snapshots beside her file (engine/jobs/maintenance.py) are copies a restore could
reach, so they go too, and a fresh one is queued in their place; a forget run again after a crash
between its commit and this scrub finds the turns already forgotten and scrubs all the same. The forget itself is one transaction and the WAL truncation after it; the RAM vector index
of this process outlives both, so it is dropped here (its stamp already includes the forget
generation; dropping it frees the forgotten rows' memory at once). The daemon's indexer watermark is
process state of the daemon and is adjusted by its route.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from engine import jobs
from engine.jobs import maintenance
from engine.memory import forget as forgetting
from engine.memory import vector_index
from engine.settings import LifeSettings
from engine.store.connect import database_file


def forget_turns(conn: Any, chosen: forgetting.Selection, now: float, *, actor: str,
                 tz: str = LifeSettings.tz) -> forgetting.ForgetReport:
    """`tz`: her zone, the one rewritten facts are dated in (as consolidation dates them)."""
    report = forgetting.forget(conn, chosen, now, actor=actor, tz=tz)
    vector_index.forget(conn)
    path = database_file(conn)
    if path is not None and (report.turn_ids or report.already_forgotten):
        removed = maintenance.scrub_snapshots(Path(path))
        if removed:
            jobs.enqueue(conn, maintenance.SNAPSHOT, {"trigger": "forget"}, now)
        report = replace(report, snapshots_removed=removed)
    return report
