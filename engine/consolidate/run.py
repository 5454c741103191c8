"""One consolidation pass: gate, key, plan (rules or model), validate, then apply everything in one transaction.

Planning is a simulation over the active facts in memory, so no write lock is held while the
model thinks. Candidates are taken in rounds, one lineage key occurrence per round, so a history
in which the user moved twice becomes two supersessions in time order. Each round's plan is
validated; a rejected plan falls back to append-only for that round (its reason goes on the
job). Relational entries (relational_plan.py) are planned from the same gated sentences and
written in the same transaction. The writes, the episodes' `consolidated_at` and the job's
`done` commit together.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import numpy as np

from engine.consolidate.apply import AddFact, MergeInto, apply_steps
from engine.consolidate.gate import Episode, gate_reason, group_near_duplicates
from engine.consolidate.ledger import Ledger
from engine.consolidate.operator_rules import rules_plan
from engine.consolidate.plan import Candidate, Entry, Operation, Plan
from engine.consolidate.relational_plan import apply_rel_steps, plan_relations
from engine.consolidate.validate import Limits, PlanRejected, validate_plan
from engine.control import Switches
from engine.errors import ConflictError, StoreError
from engine.memory.indexer import write_vectors
from engine.memory.lineage import NONE, LineageMatcher
from engine.memory.statement import sentence_of, statement_for
from engine.settings import LifeSettings
from engine.store import consolidation as consolidation_store
from engine.store import facts as fact_store
from engine.store import relations as relation_store
from engine.store.connect import transaction
from engine.times import calendar_date

MAX_EPISODES_PER_RUN = 2000
JOB_KIND = "consolidate"


def limits_from(settings: Any) -> Limits:
    cs = settings.consolidation
    return Limits(max_retire_fraction=cs.max_retire_fraction, min_retire_allowance=cs.min_retire_allowance,
                  active_budget_chars=cs.active_budget_chars, merge_min_cosine=cs.merge_min_cosine)


def _vectors(conn: Any, embedder: Any, episodes: Sequence[Episode], now: float) -> np.ndarray:
    """The stored passage vectors of the episodes, embedding those that lack one (a turn whose vector the
    daemon's indexer has not written yet) and storing them, so the indexer does not embed them again."""
    stored = {episode_id: np.frombuffer(blob, dtype=np.float32)
              for episode_id, blob in consolidation_store.episode_vectors(conn, [e.id for e in episodes]).items()}
    missing = [e for e in episodes if e.id not in stored or stored[e.id].shape[0] != embedder.dim]
    if missing:
        fresh = embedder.embed_passages([e.text for e in missing])
        for episode, vector in zip(missing, fresh, strict=True):
            stored[episode.id] = vector
        with contextlib.suppress(StoreError):  # vectors of another model: used for this pass, not stored
            write_vectors(conn, embedder, [e.id for e in missing], fresh, now)
    if not episodes:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    rows = np.stack([stored[e.id] for e in episodes]).astype(np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def load_active(conn: Any, embedder: Any) -> dict[str, Entry]:
    rows = fact_store.active_facts(conn)
    entries: dict[str, Entry] = {}
    lacking = []
    for row in rows:
        vec = np.frombuffer(row["embedding"], dtype=np.float32) if row["embedding"] is not None else None
        if vec is None or vec.shape[0] != embedder.dim:
            lacking.append(row)
            continue
        entries[f"e{row['id']}"] = _entry(row, vec)
    if lacking:
        vectors = embedder.embed_passages([sentence_of(r["statement"]) for r in lacking])
        for row, vec in zip(lacking, vectors, strict=True):
            entries[f"e{row['id']}"] = _entry(row, vec)
    return entries


def _entry(row: Any, vec: np.ndarray) -> Entry:
    return Entry(eid=f"e{row['id']}", fact_id=row["id"], subject=row["subject"], key=row["key"],
                 statement=row["statement"], sentence=sentence_of(row["statement"]), valid_from=row["valid_from"],
                 vector=np.asarray(vec, dtype=np.float32), evidence=tuple(json.loads(row["evidence_json"])))


def build_candidates(episodes: Sequence[Episode], vectors: np.ndarray, matcher: LineageMatcher,
                     group_min_cosine: float, tz: str = LifeSettings.tz) -> list[Candidate]:
    """Key each gated episode, group near-duplicates (same subject and key), one candidate per group."""
    if not episodes:
        return []
    matches = matcher.match([e.text for e in episodes], vectors)
    buckets: dict[tuple[str, str], list[int]] = {}
    for index, (episode, match) in enumerate(zip(episodes, matches, strict=True)):
        subject = "user" if episode.source == "chat" else "companion"
        # The vocabulary is of user facts. A sentence stating several keyed facts becomes one
        # candidate per key (same words, same evidence), so each lineage can be superseded alone.
        keys = (match.keys or (NONE,)) if subject == "user" else (NONE,)
        for key in keys:
            buckets.setdefault((subject, key), []).append(index)
    candidates = []
    for (subject, key), members in buckets.items():
        groups = group_near_duplicates([episodes[i].text for i in members], vectors[members], group_min_cosine)
        for group in groups:
            indices = [members[g] for g in group]
            leader = episodes[indices[0]]
            candidates.append(Candidate(
                cid="", episode_ids=tuple(episodes[i].id for i in indices), subject=subject, key=key,
                text=leader.text.strip(), ts=leader.ts, date=calendar_date(leader.ts, tz),
                vector=vectors[indices[0]], importance=max(episodes[i].importance for i in indices)))
    candidates.sort(key=lambda c: (c.ts, c.episode_ids[0]))
    return [replace(c, cid=f"c{n}") for n, c in enumerate(candidates, 1)]


def rounds_of(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """Round r holds the r-th occurrence of each lineage key (unkeyed candidates go in the first)."""
    seen: dict[tuple[str, str], int] = {}
    rounds: list[list[Candidate]] = []
    for cand in candidates:
        index = 0
        if cand.key != NONE:
            index = seen.get((cand.subject, cand.key), 0)
            seen[(cand.subject, cand.key)] = index + 1
        while len(rounds) <= index:
            rounds.append([])
        rounds[index].append(cand)
    return rounds


class Simulation(Ledger[Entry]):
    """The active facts as they will be after each round, and the write steps that get them there."""

    def __init__(self, active: Mapping[str, Entry]):
        super().__init__(active, stored_id=lambda e: e.fact_id, new_prefix="n")

    def apply(self, plan: Plan, candidates: Sequence[Candidate], origin: str) -> None:
        by_cid = {c.cid: c for c in candidates}
        for op in plan.operations:
            cand = by_cid[op.cid]
            if op.action == "merged":
                eid = op.priors[0]
                for prior in op.priors:
                    self.steps.append(MergeInto(prior, cand.episode_ids, cand.importance))
                self.counts["merged"] += 1
                entry = self.active[eid]
                self.active[eid] = replace(entry, evidence=tuple(sorted(set(entry.evidence) | set(cand.episode_ids))))
                continue
            new_eid = self._add(cand, origin)
            if op.action == "superseded":
                self.counts["superseded"] += 1
                for prior in op.priors:
                    self.retire(prior, cand.ts, new_eid)
            else:
                self.counts["added"] += 1

    def _add(self, cand: Candidate, origin: str) -> str:
        eid = self.new_eid()
        statement = statement_for(cand.subject, cand.date, cand.text)
        newer = [e for e in self.active.values()
                 if cand.key != NONE and e.key == cand.key and e.subject == cand.subject and e.valid_from > cand.ts]
        closed_by = min(newer, key=lambda e: e.valid_from) if newer else None
        self.steps.append(AddFact(eid, cand.subject, cand.key, statement, cand.ts, cand.episode_ids,
                                  cand.importance, origin, cand.vector,
                                  closed_by.valid_from if closed_by else None, closed_by.eid if closed_by else None))
        if closed_by is None:
            self.active[eid] = Entry(eid, None, cand.subject, cand.key, statement, cand.text, cand.ts, cand.vector,
                                     cand.episode_ids)
        return eid


def fallback_plan(candidates: Sequence[Candidate]) -> Plan:
    return Plan(tuple(Operation(c.cid, "added") for c in candidates), "fallback")


def plan_run(conn: Any, embedder: Any, settings: Any, switches: Switches, now: float,
             model: Any = None) -> dict[str, Any]:
    """Read and decide: gated episodes, candidates, rounds, validated plans, the write steps.

    It writes no fact: the steps are applied by consolidate_once, in one transaction. Its one write is
    the vectors of passing episodes the indexer has not stored yet (`_vectors`, the indexer's own
    write_vectors), so they are not embedded twice.
    """
    cs = settings.consolidation
    rows = consolidation_store.unconsolidated_episodes(conn, MAX_EPISODES_PER_RUN)
    episodes = [Episode.from_row(r) for r in rows]
    gated: dict[str, int] = {}
    passing = []
    for episode in episodes:
        reason = gate_reason(episode, cs.salience_floor)
        if reason is None:
            passing.append(episode)
        else:
            gated[reason] = gated.get(reason, 0) + 1
    vectors = _vectors(conn, embedder, passing, now)
    tz = settings.life.tz
    candidates = (build_candidates(passing, vectors, LineageMatcher(embedder), cs.merge_min_cosine, tz)
                  if passing else [])
    active = load_active(conn, embedder)
    sim = Simulation(active)
    limits = limits_from(settings)
    use_model, note = _model_choice(conn, model, switches, now)
    rejections: list[str] = []
    operator_used = "model" if use_model else "rules"
    rounds = rounds_of(candidates)
    for number, batch in enumerate(rounds, 1):
        origin = "consolidation"
        try:
            if use_model:
                plan = model.plan(conn, batch, sim.active, now)
            else:
                plan = rules_plan(batch, sim.active, limits.merge_min_cosine)
            validate_plan(plan, batch, sim.active, active_before_run=sim.before_run,
                          retired_so_far=sim.retired_prior, limits=limits)
        except PlanRejected as exc:
            rejections.append(f"round {number}: {operator_used} plan rejected: {exc}")
            plan = fallback_plan(batch)
            origin = "fallback"
        sim.apply(plan, batch, origin)
    # Relational entries (rituals, nicknames ...) from the same gated sentences; rules operator only.
    relations = plan_relations(conn, passing, limits, tz)
    if relations["rejection"]:
        rejections.append(relations["rejection"])
    return {
        "episode_ids": [e.id for e in episodes], "steps": sim.steps, "relation_steps": relations["steps"],
        "relations_before": relations["active_before"], "active_before": sorted(
            e.fact_id for e in active.values() if e.fact_id is not None),
        "report": {
            "episodes": len(episodes), "gated": gated, "candidates": len(candidates),
            "rounds": len(rounds), "operator": operator_used, "operator_note": note,
            **sim.counts, "rejections": rejections, "fallback": bool(rejections),
            "relations": relations["report"],
        },
    }


def _model_choice(conn: Any, model: Any, switches: Switches, now: float) -> tuple[bool, str]:
    if model is None:
        return False, "no model endpoint configured; deterministic operator"
    if not switches.model_operator:
        return False, "model_operator switched off; deterministic operator"
    over = model.over_budget(conn, now)
    if over:
        return False, f"{over}; deterministic operator"
    return True, f"model {model.name}"


def consolidate_once(conn: Any, embedder: Any, settings: Any, switches: Switches, now: float,
                     model: Any = None, *, commit: AbstractContextManager[Any] | None = None, slow_s: float = 0.0,
                     sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """One pass. Returns the report (ids and counts only).

    `commit` is the transaction the writes join: the job runner passes the job's own
    (engine/jobs/lease.job_transaction), so the facts and the job's `done` are one commit, and the
    report becomes the job's result; None is a plain transaction (tests, tools). Taking it as a value
    keeps consolidation below the jobs package, which runs it.
    """
    planned = plan_run(conn, embedder, settings, switches, now, model)
    report = planned["report"]
    pause = (lambda: sleep(slow_s)) if slow_s > 0 else None
    block = commit if commit is not None else _plain(conn)
    with block as outcome:
        if fact_store.active_fact_ids(conn) != planned["active_before"]:
            raise ConflictError("active facts changed while consolidation was planning; it will retry")
        if relation_store.active_relation_ids(conn) != planned["relations_before"]:
            raise ConflictError("active relational entries changed while consolidation was planning; it will retry")
        apply_steps(conn, planned["steps"], now, getattr(embedder, "name", "unknown"), pause)
        apply_rel_steps(conn, planned["relation_steps"], now)
        if pause is not None:
            pause()
        consolidation_store.mark_consolidated(conn, planned["episode_ids"], now)
        report["facts_total"], report["facts_active"] = fact_store.fact_counts(conn)
        report["relations_active"] = len(relation_store.active_relation_ids(conn))
        if outcome is not None:
            outcome.result = report
            outcome.error = "; ".join(report["rejections"]) or None
    return report


class _plain:
    """A plain transaction for runs without a job (tests, tools): yields None instead of a JobOutcome."""

    def __init__(self, conn: Any):
        self._tx = transaction(conn)

    def __enter__(self) -> None:
        self._tx.__enter__()
        return None

    def __exit__(self, *exc: Any) -> None:
        self._tx.__exit__(*exc)
