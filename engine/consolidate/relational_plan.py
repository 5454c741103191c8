"""Relational consolidation: candidates, the rules plan, its validator, the append-only fallback, and the writes.

The same discipline as facts: the operator (here always deterministic) only picks `added`,
`merged` (same kind and identity) or `superseded` (same kind and slot, a different value), and for
a sentence that takes a taboo back, `lifted` (the taboos it names end) or `ignored` (none active); a
structural validator replays the plan and rejects it whole on any broken rule; a rejected plan
falls back to adding every candidate and touching nothing else; the host writes each entry as
date + the user's own sentence, in the consolidation transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.consolidate.gate import Episode
from engine.consolidate.ledger import Ledger, Retire, stored_or_new_id
from engine.consolidate.plan import Operation, Plan, same_fact
from engine.consolidate.relational import RelMatch, coined_phrases, detect, detect_lifts
from engine.consolidate.validate import Limits, PlanRejected, retire_allowance
from engine.errors import ConflictError
from engine.memory.statement import sentence_of, statement_for
from engine.settings import LifeSettings
from engine.store import relations as relation_store
from engine.times import calendar_date


@dataclass(frozen=True)
class RelCandidate:
    cid: str  # "r1"
    episode_ids: tuple[int, ...]
    match: RelMatch
    text: str
    ts: float
    date: str
    lift: bool = False  # the sentence takes `match` back (engine/data/relational.toml [[lift]])


@dataclass(frozen=True)
class RelEntry:
    eid: str  # "q12" (stored) or "p3" (written earlier this run)
    rel_id: int | None
    match: RelMatch  # recomputed from the stored sentence: the table keeps no slot column
    statement: str
    valid_from: float
    evidence: tuple[int, ...] = ()


@dataclass(frozen=True)
class AddRel:
    eid: str
    kind: str
    statement: str
    valid_from: float
    evidence: tuple[int, ...]
    closed_at: float | None = None  # older than an entry already in its slot: born superseded
    closed_by: str | None = None


@dataclass(frozen=True)
class MergeRel:
    eid: str
    evidence: tuple[int, ...]


RelStep = AddRel | MergeRel | Retire


def same_entry(a: RelMatch, b: RelMatch) -> bool:
    """Same kind and the same thing: a slotted kind needs the exact value (小林 is not 小林子), others the same words."""
    if a.kind != b.kind or a.slot != b.slot:
        return False
    if a.slot:
        return a.value == b.value
    return a.value == b.value or same_fact(a.value, b.value, 1.0)


def contradicts(new: RelMatch, old: RelMatch) -> bool:
    return new.kind == old.kind and bool(new.slot) and new.slot == old.slot and new.value != old.value


def lifts(cand: RelCandidate, entry: RelEntry) -> bool:
    """A lift ends an entry of its kind with the same value that was said before it."""
    return cand.lift and same_entry(cand.match, entry.match) and entry.valid_from <= cand.ts


def build_rel_candidates(passing: Sequence[Episode], coined: Sequence[tuple[float, str]],
                         tz: str = LifeSettings.tz) -> list[RelCandidate]:
    """One candidate per (gated user chat sentence, kind it states). Never her life, never her replies."""
    out: list[RelCandidate] = []
    for episode in passing:
        if episode.source != "chat" or episode.role != "user":
            continue
        earlier = [phrase for ts, phrase in coined if ts < episode.ts]
        date = calendar_date(episode.ts, tz)
        stated = [(match, False) for match in detect(episode.text, earlier)]
        for match, lift in stated + [(match, True) for match in detect_lifts(episode.text)]:
            out.append(RelCandidate(f"r{len(out) + 1}", (episode.id,), match, episode.text.strip(), episode.ts, date,
                                    lift))
    return out


def load_rel_active(conn: Any, coined_at: Sequence[tuple[float, str]]) -> dict[str, RelEntry]:
    coined = [phrase for _, phrase in coined_at]
    entries = {}
    for row in relation_store.active_relations(conn):
        sentence = sentence_of(row["statement"])
        found = [m for m in detect(sentence, coined) if m.kind == row["kind"]]
        match = found[0] if found else RelMatch(row["kind"], "", "")
        entries[f"q{row['id']}"] = RelEntry(f"q{row['id']}", row["id"], match, row["statement"], row["valid_from"],
                                            tuple(json.loads(row["evidence_json"])))
    return entries


def rel_rules_plan(candidates: Sequence[RelCandidate], active: Mapping[str, RelEntry]) -> Plan:
    """Time order, each candidate against the entries as they stand after the ones before it."""
    sim = RelSimulation(active)
    operations = []
    for cand in candidates:
        live = list(sim.active.values())
        if cand.lift:
            ended = tuple(e.eid for e in live if lifts(cand, e))
            op = Operation(cand.cid, "lifted", ended) if ended else Operation(cand.cid, "ignored")
            operations.append(op)
            sim.step(op, cand)
            continue
        same = [e for e in live if same_entry(cand.match, e.match)]
        older = [e for e in live if contradicts(cand.match, e.match) and e.valid_from <= cand.ts]
        if same:
            op = Operation(cand.cid, "merged", (same[0].eid,))
        elif older:
            op = Operation(cand.cid, "superseded", tuple(e.eid for e in older))
        else:
            op = Operation(cand.cid, "added")
        operations.append(op)
        sim.step(op, cand)
    return Plan(tuple(operations), "rules")


class RelSimulation(Ledger[RelEntry]):
    """The active relational entries as each operation leaves them, and the write steps."""

    def __init__(self, active: Mapping[str, RelEntry]):
        super().__init__(active, stored_id=lambda e: e.rel_id, new_prefix="p")
        self.counts["lifted"] = 0

    def step(self, op: Operation, cand: RelCandidate) -> None:
        if op.action == "ignored":
            return
        if op.action == "lifted":
            for prior in op.priors:
                self.retire(prior, cand.ts, None, cand.episode_ids)
            self.counts["lifted"] += 1
            return
        if op.action == "merged":
            entry = self.active[op.priors[0]]
            self.steps.append(MergeRel(entry.eid, cand.episode_ids))
            self.active[entry.eid] = replace(entry, evidence=tuple(sorted(set(entry.evidence) | set(cand.episode_ids))))
            self.counts["merged"] += 1
            return
        eid = self.new_eid()
        statement = statement_for("user", cand.date, cand.text)
        newer = [e for e in self.active.values() if contradicts(cand.match, e.match) and e.valid_from > cand.ts]
        closer = min(newer, key=lambda e: e.valid_from) if newer else None
        self.steps.append(AddRel(eid, cand.match.kind, statement, cand.ts, cand.episode_ids,
                                 closer.valid_from if closer else None, closer.eid if closer else None))
        if closer is None:
            self.active[eid] = RelEntry(eid, None, cand.match, statement, cand.ts, cand.episode_ids)
        if op.action == "superseded":
            for prior in op.priors:
                self.retire(prior, cand.ts, eid)
            self.counts["superseded"] += 1
        else:
            self.counts["added"] += 1


def validate_rel_plan(plan: Plan, candidates: Sequence[RelCandidate], active: Mapping[str, RelEntry],
                      limits: Limits) -> RelSimulation:
    """Replay the plan, raising PlanRejected on the first broken rule; returns the simulation it leaves."""
    if len(plan.operations) != len(candidates):
        raise PlanRejected(f"relational plan has {len(plan.operations)} operations for {len(candidates)} "
                           "candidates; exactly one per candidate is required")
    sim = RelSimulation(active)
    used: set[str] = set()
    for op, cand in zip(plan.operations, candidates, strict=True):
        if op.cid != cand.cid:
            raise PlanRejected(f"relational operation for {op.cid!r} is out of order (expected {cand.cid})")
        if op.action not in ("added", "merged", "superseded", "lifted", "ignored"):
            raise PlanRejected(f"candidate {op.cid}: unknown action {op.action!r}")
        if cand.lift != (op.action in ("lifted", "ignored")):
            raise PlanRejected(f"candidate {op.cid}: '{op.action}' is not an action for a "
                               f"{'lift' if cand.lift else 'new entry'}; a lift is 'lifted' or 'ignored'")
        if op.action in ("added", "ignored") and op.priors:
            raise PlanRejected(f"candidate {op.cid}: '{op.action}' must name no prior entries")
        if op.action in ("merged", "superseded", "lifted") and not op.priors:
            raise PlanRejected(f"candidate {op.cid}: '{op.action}' must name at least one prior entry")
        for eid in op.priors:
            entry = sim.active.get(eid)
            if entry is None or eid in used:
                raise PlanRejected(f"candidate {op.cid}: prior entry {eid!r} is unknown, inactive or named twice")
            used.add(eid)
            if op.action == "merged" and not same_entry(cand.match, entry.match):
                raise PlanRejected(f"candidate {op.cid}: cannot merge into {eid}: not the same {cand.match.kind}")
            if op.action == "superseded" and not (contradicts(cand.match, entry.match)
                                                  and entry.valid_from <= cand.ts):
                raise PlanRejected(f"candidate {op.cid} ({cand.match.kind}) cannot supersede {eid}: "
                                   "needs the same kind and slot, a different value, and an older entry")
            if op.action == "lifted" and not lifts(cand, entry):
                raise PlanRejected(f"candidate {op.cid} cannot lift {eid}: needs an older {cand.match.kind} "
                                   "with the value it takes back")
        sim.step(op, cand)
    allowance = retire_allowance(sim.before_run, limits)
    if sim.retired_prior > allowance:
        raise PlanRejected(f"relational plan retires {sim.retired_prior} of {sim.before_run} active entries; "
                           f"at most {allowance} ({limits.max_retire_fraction:.0%}) may be retired per run")
    return sim


def plan_relations(conn: Any, passing: Sequence[Episode], limits: Limits, tz: str = LifeSettings.tz) -> dict[str, Any]:
    """Read and decide (no writes): candidates, the validated plan or the fallback, the steps and a report."""
    coined = coined_phrases(conn)  # scans every reply she sent: once a pass
    candidates = build_rel_candidates(passing, coined, tz)
    active = load_rel_active(conn, coined)
    rejection = None
    try:
        sim = validate_rel_plan(rel_rules_plan(candidates, active), candidates, active, limits)
    except PlanRejected as exc:
        rejection = f"relations: rules plan rejected: {exc}"
        sim = RelSimulation(active)
        for cand in candidates:  # append-only: new entries are kept, nothing ends (lifts included)
            sim.step(Operation(cand.cid, "ignored" if cand.lift else "added"), cand)
    kinds: dict[str, int] = {}
    for cand in candidates:
        label = f"{cand.match.kind}_lift" if cand.lift else cand.match.kind
        kinds[label] = kinds.get(label, 0) + 1
    return {"steps": sim.steps, "active_before": sorted(e.rel_id for e in active.values() if e.rel_id is not None),
            "rejection": rejection,
            "report": {"candidates": len(candidates), "kinds": kinds, **sim.counts, "fallback": rejection is not None}}


def _id_of(eid: str, ids: dict[str, int]) -> int:
    return stored_or_new_id(eid, ids, "q")


def apply_rel_steps(conn: Any, steps: Sequence[RelStep], now: float) -> dict[str, int]:
    """Execute the steps inside the caller's transaction; returns provisional id -> mem_relational id."""
    ids: dict[str, int] = {}
    for step in steps:
        if isinstance(step, AddRel):
            ids[step.eid] = relation_store.insert_relation(conn, kind=step.kind, statement=step.statement,
                                                           valid_from=step.valid_from, recorded_at=now,
                                                           evidence=step.evidence)
        elif isinstance(step, MergeRel):
            rel_id = _id_of(step.eid, ids)
            merged = sorted(set(relation_store.relation_evidence(conn, rel_id) or []) | set(step.evidence))
            if not relation_store.merge_into_relation(conn, rel_id, merged):
                raise ConflictError(f"relational entry {rel_id} is no longer active; consolidation will retry")
        else:
            rel_id = _id_of(step.eid, ids)
            superseded_by = None if step.by is None else _id_of(step.by, ids)
            if not relation_store.retire_relation(conn, rel_id, step.valid_to, superseded_by, step.ended_by):
                raise ConflictError(f"relational entry {rel_id} is no longer active; consolidation will retry")
    for step in steps:
        if isinstance(step, AddRel) and step.closed_by is not None:
            relation_store.close_new_relation(conn, ids[step.eid], step.closed_at, _id_of(step.closed_by, ids))
    return ids
