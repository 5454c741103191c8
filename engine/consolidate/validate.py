"""The structural validator: any broken rule rejects the whole plan, with the reason (after OpenClaw dreaming, MIT).

Both operators (rules and model) pass through here; the host never applies a plan it has not
checked. Rules: exactly one operation per candidate; known actions; prior ids exist, are active
and are used once in the whole plan; `added` has no priors, the others at least one; `merged`
priors state the same fact (same numbers, same words); `superseded` priors share the candidate's
lineage key (never `none`) and subject and are older; at most `max_retire_fraction` of the
entries active before this run are retired; the active entries stay within the size budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.consolidate.plan import ACTIONS, Candidate, Entry, Plan, same_fact
from engine.memory.lineage import NONE
from engine.memory.statement import statement_for


@dataclass(frozen=True)
class Limits:
    max_retire_fraction: float = 0.25
    min_retire_allowance: int = 1  # a tiny store may still retire one entry per run
    active_budget_chars: int = 200000
    merge_min_cosine: float = 0.95


class PlanRejected(Exception):
    """The plan broke a rule; str(exc) says which, naming the candidate or entry."""


def retire_allowance(active_before_run: int, limits: Limits) -> int:
    return max(math.floor(limits.max_retire_fraction * active_before_run), limits.min_retire_allowance)


def validate_plan(plan: Plan, candidates: Sequence[Candidate], active: Mapping[str, Entry], *,
                  active_before_run: int, retired_so_far: int, limits: Limits) -> None:
    """Raise PlanRejected on the first broken rule; return None when the plan may be applied.

    `retired_so_far` counts entries from before this run already retired by earlier rounds.
    """
    by_cid = {c.cid: c for c in candidates}
    seen_cids: set[str] = set()
    used_priors: set[str] = set()
    if len(plan.operations) != len(candidates):
        raise PlanRejected(f"plan has {len(plan.operations)} operations for {len(candidates)} candidates; "
                           "exactly one per candidate is required")
    retiring = 0
    size = sum(len(e.statement) for e in active.values())
    for op in plan.operations:
        cand = by_cid.get(op.cid)
        if cand is None:
            raise PlanRejected(f"operation names unknown candidate {op.cid!r}")
        if op.cid in seen_cids:
            raise PlanRejected(f"candidate {op.cid} has more than one operation")
        seen_cids.add(op.cid)
        if op.action not in ACTIONS:
            raise PlanRejected(f"candidate {op.cid}: unknown action {op.action!r} (allowed: {', '.join(ACTIONS)})")
        if op.action == "added":
            if op.priors:
                raise PlanRejected(f"candidate {op.cid}: 'added' must name no prior entries, got {list(op.priors)}")
            size += len(statement_for(cand.subject, cand.date, cand.text))
            continue
        if not op.priors:
            raise PlanRejected(f"candidate {op.cid}: '{op.action}' must name at least one prior entry")
        for eid in op.priors:
            entry = active.get(eid)
            if entry is None:
                raise PlanRejected(f"candidate {op.cid}: prior entry {eid!r} does not exist or is not active")
            if eid in used_priors:
                raise PlanRejected(f"prior entry {eid} is named more than once in the plan")
            used_priors.add(eid)
            if op.action == "merged":
                cosine = float(cand.vector @ entry.vector)
                if entry.subject != cand.subject or not same_fact(cand.text, entry.sentence, cosine,
                                                                  limits.merge_min_cosine):
                    raise PlanRejected(f"candidate {op.cid}: cannot merge into {eid}: not the same fact "
                                       "(numbers or words differ)")
            else:
                if cand.key == NONE or entry.key != cand.key or entry.subject != cand.subject:
                    raise PlanRejected(f"candidate {op.cid} (key {cand.key}) cannot supersede {eid} "
                                       f"(key {entry.key}): lineage keys must match and not be 'none'")
                if entry.valid_from > cand.ts:
                    raise PlanRejected(f"candidate {op.cid} is older than {eid}; an older fact cannot supersede a newer one")
                size -= len(entry.statement)
                if entry.fact_id is not None:
                    retiring += 1
        if op.action == "superseded":
            size += len(statement_for(cand.subject, cand.date, cand.text))
    allowance = retire_allowance(active_before_run, limits)
    if retired_so_far + retiring > allowance:
        raise PlanRejected(f"plan retires {retired_so_far + retiring} of {active_before_run} active entries; "
                           f"at most {allowance} ({limits.max_retire_fraction:.0%}) may be retired per run")
    if size > limits.active_budget_chars:
        raise PlanRejected(f"active entries would total {size} characters, over the budget of "
                           f"{limits.active_budget_chars} ([consolidation] active_budget_chars)")
