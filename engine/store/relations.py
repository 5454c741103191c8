"""Accessors of the relational table (mem_relational): rituals, nicknames, inside jokes, patterns and taboos.

engine/consolidate/relational*.py decide what an entry is and when it ends; these functions
read and write it, one named query of consolidate.sql each. Transactions are the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.store.queries import q


def companion_quotes(conn: Any) -> list[Any]:
    """Her sent, non-echo replies that contain a quote mark (text, ts), oldest first: inside-joke sources."""
    return list(conn.execute(q("companion_quotes")).fetchall())


def active_relations(conn: Any) -> list[Any]:
    """Every active relational entry, by id."""
    return list(conn.execute(q("active_relations")).fetchall())


def relations_as_of(conn: Any, as_of: float) -> list[Any]:
    """The entries valid at `as_of` (begun by then, not yet ended), by id."""
    return list(conn.execute(q("relations_as_of"), {"as_of": as_of}).fetchall())


def all_relations(conn: Any) -> list[Any]:
    """Every entry ever recorded, superseded ones included, by id."""
    return list(conn.execute(q("all_relations")).fetchall())


def relations_for_reply(conn: Any, limit: int) -> list[Any]:
    """Active entries for the next reply (id, kind, statement, valid_from): every taboo first, then the newest."""
    return list(conn.execute(q("relationship_for_reply"), {"limit": limit}).fetchall())


def active_relation_ids(conn: Any) -> list[int]:
    """The ids of the active entries, ascending (the commit-time check)."""
    return [int(row["id"]) for row in conn.execute(q("active_relation_ids"))]


def insert_relation(conn: Any, *, kind: str, statement: str, valid_from: float, recorded_at: float,
                    evidence: Sequence[int]) -> int:
    """Add one active entry with its evidence memory ids; its id."""
    row = conn.execute(q("insert_relation"), {"kind": kind, "statement": statement, "valid_from": valid_from,
                                              "recorded_at": recorded_at,
                                              "evidence_json": json.dumps(list(evidence))}).fetchone()
    return int(row[0])


def relation_evidence(conn: Any, rel_id: int) -> list[int] | None:
    """One entry's evidence memory ids, or None when there is no such entry."""
    row = conn.execute(q("relation_evidence"), {"id": rel_id}).fetchone()
    return None if row is None else list(json.loads(row[0]))


def merge_into_relation(conn: Any, rel_id: int, evidence: Sequence[int]) -> bool:
    """Set an active entry's evidence; False when it is no longer active."""
    cursor = conn.execute(q("merge_into_relation"), {"id": rel_id, "evidence_json": json.dumps(list(evidence))})
    return bool(cursor.rowcount == 1)


def retire_relation(conn: Any, rel_id: int, valid_to: float, superseded_by: int | None,
                    ended_by: Sequence[int] | None) -> bool:
    """End an active entry: superseded by a newer one, or lifted by the user (`ended_by` evidence);
    False when it was no longer active."""
    cursor = conn.execute(q("retire_relation"), {
        "id": rel_id, "valid_to": valid_to, "superseded_by": superseded_by,
        "ended_evidence_json": json.dumps(list(ended_by)) if ended_by else None})
    return bool(cursor.rowcount == 1)


def close_new_relation(conn: Any, rel_id: int, valid_to: float | None, superseded_by: int) -> None:
    """Close an entry this same run added (a newer one of its slot was already known)."""
    conn.execute(q("close_new_relation"), {"id": rel_id, "valid_to": valid_to, "superseded_by": superseded_by})
