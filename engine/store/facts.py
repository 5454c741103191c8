"""Accessors of the fact tables (mem_semantic, mem_semantic_vec): what consolidation writes and fact recall reads.

The bitemporal rules (a fact is never deleted, only closed by a newer one) live in
engine/consolidate; these functions say them to the database, one named query of
consolidate.sql each. Rows come back as the driver's rows; transactions are the caller's (a
pass's writes commit with its job's `done`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from engine.store.queries import q


def insert_fact(conn: Any, *, subject: str, key: str, statement: str, valid_from: float, recorded_at: float,
                evidence: Sequence[int], importance: float, origin: str) -> int:
    """Add one active fact with its evidence memory ids; its id."""
    row = conn.execute(q("insert_fact"), {
        "subject": subject, "key": key, "statement": statement, "valid_from": valid_from, "valid_to": None,
        "recorded_at": recorded_at, "superseded_by": None, "evidence_json": json.dumps(list(evidence)),
        "importance": importance, "origin": origin}).fetchone()
    return int(row[0])


def write_fact_vector(conn: Any, fact_id: int, model: str, embedding: bytes) -> None:
    """Store (or replace) one fact's vector, float32 bytes, with the model that made it."""
    conn.execute(q("insert_fact_vec"), {"fact_id": fact_id, "model": model, "embedding": embedding})


def fact_evidence(conn: Any, fact_id: int) -> list[int] | None:
    """One fact's evidence memory ids, or None when there is no such fact."""
    row = conn.execute(q("fact_evidence"), {"id": fact_id}).fetchone()
    return None if row is None else list(json.loads(row[0]))


def merge_into_fact(conn: Any, fact_id: int, evidence: Sequence[int], importance: float) -> bool:
    """Set an active fact's evidence (importance only rises); False when the fact is no longer active."""
    cursor = conn.execute(q("merge_into_fact"), {"id": fact_id, "evidence_json": json.dumps(list(evidence)),
                                                 "importance": importance})
    return bool(cursor.rowcount == 1)


def retire_fact(conn: Any, fact_id: int, valid_to: float, superseded_by: int) -> bool:
    """Close an active fact, superseded by another; False when it was no longer active."""
    cursor = conn.execute(q("retire_fact"), {"id": fact_id, "valid_to": valid_to, "superseded_by": superseded_by})
    return bool(cursor.rowcount == 1)


def close_new_fact(conn: Any, fact_id: int, valid_to: float | None, superseded_by: int) -> None:
    """Close a fact this same run added (a newer fact of its key was already known)."""
    conn.execute(q("close_new_fact"), {"id": fact_id, "valid_to": valid_to, "superseded_by": superseded_by})


def active_facts(conn: Any) -> list[Any]:
    """Every fact still valid, with its vector (`embedding`, None when it has none), by id."""
    return list(conn.execute(q("active_facts")).fetchall())


def facts_as_of(conn: Any, as_of: float) -> list[Any]:
    """The facts true at `as_of` (begun by then, not ended by then), with their vectors, by id."""
    return list(conn.execute(q("facts_as_of"), {"as_of": as_of}).fetchall())


def all_facts(conn: Any) -> list[Any]:
    """Every fact ever recorded, retired ones included, by id."""
    return list(conn.execute(q("all_facts")).fetchall())


def facts_by_ids(conn: Any, ids: Sequence[int]) -> dict[int, Any]:
    """fact id -> row for the given ids (missing ids are left out)."""
    return {row["id"]: row for row in conn.execute(q("facts_by_ids"), {"ids": json.dumps(list(ids))})}


def active_fact_ids(conn: Any) -> list[int]:
    """The ids of the active facts, ascending (the commit-time check: no vectors read)."""
    return [int(row["id"]) for row in conn.execute(q("active_fact_ids"))]


def fact_counts(conn: Any) -> tuple[int, int]:
    """(facts ever recorded, facts active)."""
    row = conn.execute(q("count_facts")).fetchone()
    return int(row["total"] or 0), int(row["active"] or 0)


def evidence_episodes(conn: Any, memory_ids: Sequence[int]) -> list[Any]:
    """The episodes behind evidence memory ids (memory_id, turn_id, ts, source), oldest first."""
    return list(conn.execute(q("fact_evidence_turns"), {"ids": json.dumps(list(memory_ids))}).fetchall())


def evidence_messages(conn: Any, turn_id: str) -> list[Any]:
    """Both sent sides of one evidence turn (role, text, ts, ts_iso), the user's first."""
    return list(conn.execute(q("evidence_messages"), {"turn_id": turn_id}).fetchall())


def facts_fingerprint(conn: Any) -> tuple[Any, ...]:
    """What moves on every change fact recall caches: counts, max ids, the valid-time sum, the forget count.

    A forget deletes or rewrites facts (ids may be reused), so its generation is part of it.
    """
    return (*conn.execute(q("facts_version")).fetchone(), conn.execute(q("forget_generation")).fetchone()[0])


def fact_vectors(conn: Any) -> Iterator[Any]:
    """Every fact that has a vector (id, valid_from, valid_to, embedding), by id, streamed (all the blobs)."""
    return iter(conn.execute(q("fact_vectors")))
