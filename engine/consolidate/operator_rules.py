"""The deterministic operator: same fact -> merged, same lineage key -> superseded, otherwise added.

It proposes; the validator still checks. Similarity is the candidate's vector against each
active entry's, confirmed by the lexical same-fact test; supersession needs a shared lineage key
(never `none`), so an unkeyed sentence can never retire anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.consolidate.plan import Candidate, Entry, Operation, Plan, same_fact
from engine.memory.lineage import NONE


def rules_plan(candidates: Sequence[Candidate], active: Mapping[str, Entry], merge_min_cosine: float = 0.95) -> Plan:
    operations = []
    taken: set[str] = set()
    for cand in candidates:
        mine = [e for e in active.values() if e.subject == cand.subject and e.eid not in taken]
        duplicates = [
            e for e in mine
            if (e.key == cand.key or NONE in (e.key, cand.key))
            and same_fact(cand.text, e.sentence, float(cand.vector @ e.vector), merge_min_cosine)
        ]
        if duplicates:
            best = max(duplicates, key=lambda e: float(cand.vector @ e.vector))
            operations.append(Operation(cand.cid, "merged", (best.eid,)))
            taken.add(best.eid)
            continue
        same_key = [e for e in mine if cand.key != NONE and e.key == cand.key and e.valid_from <= cand.ts]
        if same_key:
            operations.append(Operation(cand.cid, "superseded", tuple(e.eid for e in same_key)))
            taken.update(e.eid for e in same_key)
            continue
        operations.append(Operation(cand.cid, "added"))
    return Plan(tuple(operations), "rules")
