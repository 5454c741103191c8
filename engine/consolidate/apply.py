"""Apply a checked consolidation outcome: the host writes every fact from evidence, in the caller's transaction.

Writes are steps computed beforehand by the planner (run.py): add a fact (statement = date +
source sentence), merge evidence into an existing fact, retire a fact (close valid_to, set
superseded_by). Nothing is deleted. Provisional ids ("n3") of facts written earlier in the same
run are mapped to their real ids as they are inserted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.consolidate.ledger import Retire, stored_or_new_id
from engine.errors import ConflictError
from engine.store import facts as fact_store


@dataclass(frozen=True)
class AddFact:
    eid: str  # provisional id "nN"
    subject: str
    key: str
    statement: str
    valid_from: float
    evidence: tuple[int, ...]
    importance: float
    origin: str
    vector: np.ndarray = field(repr=False, compare=False)
    closed_at: float | None = None  # an older fact arriving after a newer one of its key: born closed
    closed_by: str | None = None


@dataclass(frozen=True)
class MergeInto:
    eid: str
    evidence: tuple[int, ...]
    importance: float


Step = AddFact | MergeInto | Retire


def fact_id_of(eid: str, ids: dict[str, int]) -> int:
    return stored_or_new_id(eid, ids, "e")


def apply_steps(conn: Any, steps: Sequence[Step], now: float, model_name: str,
                pause: Callable[[], None] | None = None) -> dict[str, int]:
    """Execute the steps (inside the caller's transaction); returns provisional id -> fact id."""
    ids: dict[str, int] = {}
    for step in steps:
        if isinstance(step, AddFact):
            fact_id = fact_store.insert_fact(
                conn, subject=step.subject, key=step.key, statement=step.statement, valid_from=step.valid_from,
                recorded_at=now, evidence=step.evidence, importance=step.importance, origin=step.origin)
            ids[step.eid] = fact_id
            fact_store.write_fact_vector(conn, fact_id, model_name, np.asarray(step.vector, dtype=np.float32).tobytes())
        elif isinstance(step, MergeInto):
            fact_id = fact_id_of(step.eid, ids)
            evidence = fact_store.fact_evidence(conn, fact_id)
            if evidence is None:
                raise ConflictError(f"fact {fact_id} vanished during consolidation")
            merged = sorted(set(evidence) | set(step.evidence))
            if not fact_store.merge_into_fact(conn, fact_id, merged, step.importance):
                raise ConflictError(f"fact {fact_id} is no longer active; consolidation will retry")
        else:
            fact_id = fact_id_of(step.eid, ids)
            if step.by is None:
                raise ConflictError(f"fact {fact_id}: a fact ends only when a newer one supersedes it")
            if not fact_store.retire_fact(conn, fact_id, step.valid_to, fact_id_of(step.by, ids)):
                raise ConflictError(f"fact {fact_id} is no longer active; consolidation will retry")
        if pause is not None:
            pause()
    for step in steps:
        if isinstance(step, AddFact) and step.closed_by is not None:
            fact_store.close_new_fact(conn, ids[step.eid], step.closed_at, fact_id_of(step.closed_by, ids))
    return ids
