"""Accessors of a forget: the statements that remove turns and what was derived from them (forget.sql).

engine/memory/forget.py decides what goes, what is rewritten and what is reopened, and runs it all
in one transaction under the forget marker (migration 0007's triggers refuse every delete without
it); these functions say each step to the database. Transactions are the caller's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from engine.store.queries import q

# PRAGMA secure_delete reports 0, 1 or 2; a forget puts back what the connection had.
_SECURE_DELETE = {0: "forget_secure_delete_off", 1: "forget_secure_delete_on", 2: "forget_secure_delete_fast"}


def _ids(ids: Sequence[Any]) -> str:
    return json.dumps(list(ids), ensure_ascii=False)


# --- around the transaction ---------------------------------------------------------------------------


def secure_delete_state(conn: Any) -> int:
    """This connection's PRAGMA secure_delete (0 off, 1 on, 2 fast)."""
    return int(conn.execute(q("forget_secure_delete_state")).fetchone()[0])


def secure_delete_on(conn: Any) -> None:
    """Zero deleted content (cells, freed pages, overflow chains) instead of only unlinking it."""
    conn.execute(q("forget_secure_delete_on"))


def restore_secure_delete(conn: Any, previous: int) -> None:
    """Put back the secure_delete setting `previous` (an unknown value: off, SQLite's default)."""
    conn.execute(q(_SECURE_DELETE.get(previous, "forget_secure_delete_off")))


def truncate_wal(conn: Any) -> bool:
    """Checkpoint the WAL into the file and cut it to zero bytes; False when a reader kept it busy."""
    return bool(conn.execute(q("forget_checkpoint")).fetchone()[0] == 0)


def set_marker(conn: Any, now: float) -> None:
    """The forget-in-progress row that lets the no-delete triggers through (cleared before commit)."""
    conn.execute(q("forget_set_marker"), {"now": now})


def clear_marker(conn: Any) -> None:
    """Every other delete is refused again."""
    conn.execute(q("forget_clear_marker"))


# --- which turns, and their rows ----------------------------------------------------------------------


def turn_exists(conn: Any, turn_id: str) -> bool:
    """Does any message of this turn exist."""
    return bool(conn.execute(q("forget_turn_exists"), {"turn_id": turn_id}).fetchone()[0])


def all_turn_ids(conn: Any) -> list[str]:
    """Every turn there is, by id."""
    return [row[0] for row in conn.execute(q("forget_all_turns"))]


def turn_ids_between(conn: Any, since: float | None, until: float | None) -> list[str]:
    """Every turn with a message said in [since, until) (None: an open end), by id."""
    # An open end is ±inf; SQLite compares a bound infinity as expected.
    return [row[0] for row in conn.execute(q("forget_turns_between"), {
        "since": -math.inf if since is None else since, "until": math.inf if until is None else until})]


def messages_of_turns(conn: Any, turn_ids: Sequence[str]) -> list[Any]:
    """(id, turn_id, role, text) of the turns' messages."""
    return list(conn.execute(q("forget_messages_of_turns"), {"turn_ids": _ids(turn_ids)}).fetchall())


def memories_of_messages(conn: Any, message_ids: Sequence[int]) -> list[int]:
    """The ids of the memory rows made from those messages."""
    return [int(r["id"]) for r in conn.execute(q("forget_memories_of_messages"), {"message_ids": _ids(message_ids)})]


def delete_injections(conn: Any, *, turn_ids: Sequence[str], memory_ids: Sequence[int], fact_ids: Sequence[int],
                      texts: Sequence[str]) -> int:
    """Delete the injection records of the turns, or citing those memories or facts, or quoting a text; how many."""
    return int(conn.execute(q("forget_delete_injections"), {
        "turn_ids": _ids(turn_ids), "memory_ids": _ids(memory_ids), "fact_ids": _ids(fact_ids),
        "texts": _ids(texts)}).rowcount)


def delete_offers(conn: Any, turn_ids: Sequence[str]) -> int:
    """Delete the share offers made in or receipted by the turns; how many."""
    return int(conn.execute(q("forget_delete_offers"), {"turn_ids": _ids(turn_ids)}).rowcount)


def unlink_told_turn(conn: Any, turn_ids: Sequence[str]) -> None:
    """Life events told in the turns stay told but no longer name the turn."""
    conn.execute(q("forget_unlink_told_turn"), {"turn_ids": _ids(turn_ids)})


def delete_memories(conn: Any, memory_ids: Sequence[int], message_ids: Sequence[int]) -> None:
    """Delete the memories (keyword rows, both vectors, the rows) and their messages, then merge the FTS5
    segments so that deleted terms leave the index's b-trees and vocabulary too."""
    ids_json = _ids(memory_ids)
    conn.execute(q("forget_delete_fts"), {"ids": ids_json})
    for memory_id in memory_ids:  # vec0 deletes one rowid per statement
        conn.execute(q("forget_delete_vec"), {"id": memory_id})
    conn.execute(q("forget_delete_embeddings"), {"ids": ids_json})
    conn.execute(q("forget_delete_memories"), {"ids": ids_json})
    conn.execute(q("forget_delete_messages"), {"ids": _ids(message_ids)})
    conn.execute(q("forget_fts_optimize"))


# --- job text -----------------------------------------------------------------------------------------


def job_texts(conn: Any) -> list[Any]:
    """(id, payload_json, scratch_json, result_json, error) of every job."""
    return list(conn.execute(q("forget_job_texts")).fetchall())


def scrub_job(conn: Any, job_id: int, fields: dict[str, Any]) -> None:
    """Write a job's payload_json, scratch_json, result_json and error (those that held a text emptied)."""
    conn.execute(q("forget_scrub_job"), {"id": job_id, **fields})


def job_event_texts(conn: Any) -> list[Any]:
    """(id, detail_json) of every job history row."""
    return list(conn.execute(q("forget_job_event_texts")).fetchall())


def scrub_job_event(conn: Any, event_id: int) -> None:
    """Empty one job history detail (the event itself stays)."""
    conn.execute(q("forget_scrub_job_event"), {"id": event_id})


# --- derived entries: facts and relations ------------------------------------------------------------


def evidence_episodes(conn: Any, memory_ids: Sequence[int]) -> list[Any]:
    """(id, source, ts, raw, ts_iso) of the given memories, oldest first."""
    return list(conn.execute(q("forget_evidence_episodes"), {"ids": _ids(memory_ids)}).fetchall())


def facts_citing(conn: Any, memory_ids: Sequence[int]) -> list[Any]:
    """Every fact, active or superseded, with one of the memories as evidence, by id."""
    return list(conn.execute(q("forget_facts_citing"), {"ids": _ids(memory_ids)}).fetchall())


def rewrite_fact(conn: Any, fact_id: int, statement: str, evidence: Sequence[int]) -> None:
    """Set a fact's statement and evidence."""
    conn.execute(q("forget_rewrite_fact"), {"id": fact_id, "statement": statement, "evidence_json": _ids(evidence)})


def repoint_fact(conn: Any, fact_id: int, superseded_by: int | None) -> None:
    """Set which fact closed this one (None: none)."""
    conn.execute(q("forget_repoint_fact"), {"id": fact_id, "superseded_by": superseded_by})


def facts_superseded_by(conn: Any, fact_id: int) -> list[Any]:
    """(id, key) of the facts this one closed, newest first."""
    return list(conn.execute(q("forget_facts_superseded_by"), {"id": fact_id}).fetchall())


def active_fact_of_key(conn: Any, key: str, excluding: Sequence[int]) -> int | None:
    """The newest active fact of a lineage key, not one of `excluding`; None when there is none."""
    row = conn.execute(q("forget_active_fact_of_key"), {"key": key, "gone": _ids(excluding)}).fetchone()
    return None if row is None else int(row[0])


def reopen_fact(conn: Any, fact_id: int) -> None:
    """Make a closed fact valid again (no end, no successor)."""
    conn.execute(q("forget_reopen_fact"), {"id": fact_id})


def delete_fact_vector(conn: Any, fact_id: int) -> None:
    """Remove a fact's vector."""
    conn.execute(q("forget_delete_fact_vec"), {"id": fact_id})


def delete_fact(conn: Any, fact_id: int) -> None:
    """Delete a fact and its vector."""
    delete_fact_vector(conn, fact_id)
    conn.execute(q("forget_delete_fact"), {"id": fact_id})


def fact_vector_model(conn: Any, fact_id: int) -> str | None:
    """The model name on a fact's vector, None when it has none."""
    row = conn.execute(q("forget_fact_vector_model"), {"id": fact_id}).fetchone()
    return None if row is None else str(row[0])


def episode_vector(conn: Any, memory_id: int) -> bytes | None:
    """One memory's stored passage vector (float32 bytes), None when it has none."""
    row = conn.execute(q("forget_episode_vector"), {"id": memory_id}).fetchone()
    return None if row is None else bytes(row[0])


def relations_citing(conn: Any, memory_ids: Sequence[int]) -> list[Any]:
    """Every relational entry whose evidence, or whose ending's evidence, includes one of the memories, by id."""
    return list(conn.execute(q("forget_relations_citing"), {"ids": _ids(memory_ids)}).fetchall())


def rewrite_relation(conn: Any, relation_id: int, statement: str, evidence: Sequence[int],
                     ended_evidence: Sequence[int] | None) -> None:
    """Set a relational entry's statement, evidence and ending evidence (None: none)."""
    conn.execute(q("forget_rewrite_relation"), {
        "id": relation_id, "statement": statement, "evidence_json": _ids(evidence),
        "ended_evidence_json": _ids(ended_evidence) if ended_evidence else None})


def reopen_relation(conn: Any, relation_id: int) -> None:
    """Make a superseded or lifted relational entry active again."""
    conn.execute(q("forget_reopen_relation"), {"id": relation_id})


def unlink_relation(conn: Any, relation_id: int) -> None:
    """A relational entry stops pointing at its successor."""
    conn.execute(q("forget_rewrite_relation_link"), {"id": relation_id})


def relations_superseded_by(conn: Any, relation_id: int) -> list[int]:
    """The ids of the relational entries this one closed."""
    return [int(row["id"]) for row in conn.execute(q("forget_relations_superseded_by"), {"id": relation_id})]


def delete_relation(conn: Any, relation_id: int) -> None:
    """Delete a relational entry."""
    conn.execute(q("forget_delete_relation"), {"id": relation_id})
