"""The bookkeeping both consolidation planners share: the entries as each operation leaves them, the
write steps that get there, and the counts for the report.

Facts (run.Simulation) and relational entries (relational_plan.RelSimulation) differ in what an
entry is and how a new one is written. Provisional ids, retiring an entry (with the count of
entries from before the run that the retire cap checks) and the counts are the same, and live here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

E = TypeVar("E")


@dataclass(frozen=True)
class Retire:
    """Close an active entry: valid_to, and the entry that supersedes it (None: the user lifted it)."""

    eid: str
    valid_to: float
    by: str | None
    ended_by: tuple[int, ...] = ()  # the episodes that lifted it (relational taboos)


def stored_or_new_id(eid: str, ids: Mapping[str, int], stored_prefix: str) -> int:
    """The table id behind a planner id: "e12"/"q12" name stored row 12, others were written this run."""
    return int(eid[1:]) if eid.startswith(stored_prefix) else ids[eid]


class Ledger(Generic[E]):
    """Active entries keyed by planner id, the steps written so far, and what the run did."""

    def __init__(self, active: Mapping[str, E], stored_id: Callable[[E], int | None], new_prefix: str):
        self.active: dict[str, E] = dict(active)
        self.before_run = len(active)
        self.retired_prior = 0  # retired entries that existed before the run: the retire cap counts these
        self.steps: list[Any] = []
        self.counts = {"added": 0, "merged": 0, "superseded": 0, "retired": 0}
        self._stored_id = stored_id
        self._new_prefix = new_prefix
        self._next = 0

    def new_eid(self) -> str:
        self._next += 1
        return f"{self._new_prefix}{self._next}"

    def retire(self, prior: str, valid_to: float, by: str | None, ended_by: tuple[int, ...] = ()) -> None:
        self.steps.append(Retire(prior, valid_to, by, ended_by))
        if self._stored_id(self.active[prior]) is not None:
            self.retired_prior += 1
        del self.active[prior]
        self.counts["retired"] += 1
