"""Accessors of the chat-memory tables (chat_message, mem_episodic, mem_fts, mem_vec, mem_embedding, injections).

engine/memory says what a turn, a vector, an injection or a use is; these functions say it to the
database, one named query of memory.sql each. Rows come back as the driver's rows; transactions are
the caller's (a turn's writes commit together).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from engine.store.queries import q

# --- the embedding model stamp ---------------------------------------------------------------------


def embedding_model(conn: Any) -> Any | None:
    """The recorded embedding model row (name, dim), or None before the first vector."""
    return conn.execute(q("mem_get_embedding_model")).fetchone()


def set_embedding_model(conn: Any, name: str, dim: int, now: float) -> None:
    """Record (or replace) the model every stored vector comes from."""
    conn.execute(q("mem_set_embedding_model"), {"name": name, "dim": dim, "now": now})


def embedding_stamp(conn: Any) -> tuple[Any, ...]:
    """(name, dim, updated_at) of the model, () before the first: what the RAM index keys on."""
    row = conn.execute(q("mem_get_embedding_stamp")).fetchone()
    return tuple(row) if row else ()


def forget_generation(conn: Any) -> int:
    """How many forgets this file has seen (a forget frees ids below the max, so caches key on it)."""
    return int(conn.execute(q("forget_generation")).fetchone()[0])


# --- messages and memories --------------------------------------------------------------------------


def max_memory_id(conn: Any) -> int:
    """The highest memory id, 0 when there is none."""
    return int(conn.execute(q("mem_max_id")).fetchone()[0] or 0)


def message_of(conn: Any, turn_id: str, role: str) -> Any | None:
    """The stored message of one side of a turn (id, text), or None."""
    return conn.execute(q("mem_get_message"), {"turn_id": turn_id, "role": role}).fetchone()


def insert_message(conn: Any, *, turn_id: str, role: str, text: str, ts: float, ts_iso: str, origin: str,
                   now: float) -> int:
    """Add one chat message; its id."""
    return int(conn.execute(q("mem_insert_message"), {"turn_id": turn_id, "role": role, "text": text, "ts": ts,
                                                      "ts_iso": ts_iso, "origin": origin, "now": now}).fetchone()[0])


def insert_chat_memory(conn: Any, *, message_id: int, turn_id: str, role: str, ts: float, raw: str, salience: float,
                       importance: float, echo: str | None, now: float) -> int:
    """Add the episodic memory of one chat message; its id."""
    return int(conn.execute(q("mem_insert_episodic_chat"), {
        "message_id": message_id, "turn_id": turn_id, "role": role, "ts": ts, "raw": raw, "salience": salience,
        "importance": importance, "echo": echo, "now": now}).fetchone()[0])


def life_event(conn: Any, life_event_id: int) -> Any | None:
    """One life event (ts, text, told), or None."""
    return conn.execute(q("mem_get_life_event"), {"id": life_event_id}).fetchone()


def memory_of_life_event(conn: Any, life_event_id: int) -> int | None:
    """The memory id of a told life event, None when it has none yet."""
    row = conn.execute(q("mem_episodic_for_life"), {"life_event_id": life_event_id}).fetchone()
    return None if row is None else int(row["id"])


def insert_life_memory(conn: Any, *, life_event_id: int, ts: float, raw: str, salience: float, importance: float,
                       now: float) -> int:
    """Add the episodic memory of a told life event; its id."""
    return int(conn.execute(q("mem_insert_episodic_life"), {
        "life_event_id": life_event_id, "ts": ts, "raw": raw, "salience": salience, "importance": importance,
        "now": now}).fetchone()[0])


def insert_fts(conn: Any, memory_id: int, tokens: str) -> None:
    """Index one memory's keyword tokens."""
    conn.execute(q("mem_insert_fts"), {"id": memory_id, "tokens": tokens})


def insert_vector(conn: Any, memory_id: int, blob: bytes) -> None:
    """The sqlite-vec lane's row of one memory (float32 bytes)."""
    conn.execute(q("mem_insert_vec"), {"id": memory_id, "embedding": blob})


def insert_embedding(conn: Any, memory_id: int, blob: bytes) -> None:
    """The plain-table copy of one memory's vector (rescoring, the RAM index)."""
    conn.execute(q("mem_insert_embedding"), {"id": memory_id, "embedding": blob})


def turns_messages(conn: Any, turn_ids: Sequence[str], as_of: float) -> Iterator[Any]:
    """The sent messages (turn_id, role, text) of many turns as of `as_of`, each turn's user side first."""
    return iter(conn.execute(q("mem_turns_messages"), {"turn_ids": json.dumps(list(turn_ids)), "as_of": as_of}))


def turn_messages(conn: Any, turn_id: str, as_of: float) -> list[Any]:
    """The sent messages (role, text) of one turn as of `as_of`, the user side first."""
    return list(conn.execute(q("mem_turn_messages"), {"turn_id": turn_id, "as_of": as_of}).fetchall())


# --- vectors: pending, written, read ----------------------------------------------------------------


def pending_vectors(conn: Any, after: int, limit: int) -> list[Any]:
    """(id, raw) of up to `limit` memories above `after` without a vector, oldest first."""
    return list(conn.execute(q("mem_pending_vectors"), {"after": after, "limit": int(limit)}).fetchall())


def fresh_pending_vectors(conn: Any, since: float, scan: int, limit: int) -> list[Any]:
    """(id, raw) of up to `limit` memories written since `since` without a vector, among the newest `scan` ids;
    the user side first, then newest first."""
    return list(conn.execute(q("mem_fresh_pending_vectors"),
                             {"since": since, "scan": scan, "limit": int(limit)}).fetchall())


def count_pending_vectors(conn: Any, after: int) -> int:
    """How many memories above `after` have no vector."""
    return int(conn.execute(q("mem_count_pending_vectors"), {"after": after}).fetchone()[0])


def vector_state(conn: Any, memory_id: int) -> Any:
    """(has_memory, has_vector) of one memory id."""
    return conn.execute(q("mem_has_vector"), {"id": memory_id}).fetchone()


def delete_vector(conn: Any, memory_id: int) -> None:
    """Remove one memory's sqlite-vec row (a stray one would make the insert fail)."""
    conn.execute(q("mem_delete_vec"), {"id": memory_id})


def vectors_of(conn: Any, ids: Sequence[int]) -> Iterator[Any]:
    """(id, embedding) of the given memory ids that have a vector."""
    return iter(conn.execute(q("mem_vectors_of"), {"ids": json.dumps(list(ids))}))


def embeddings_after(conn: Any, after: int) -> Iterator[Any]:
    """(id, embedding) of every memory vector above `after`, by id, streamed (all the blobs)."""
    return iter(conn.execute(q("mem_embeddings_after"), {"after": after}))


def count_embeddings_after(conn: Any, after: int) -> int:
    """How many memory vectors have an id above `after`."""
    return int(conn.execute(q("mem_count_embeddings_after"), {"after": after}).fetchone()[0])


def max_embedding_id(conn: Any) -> int:
    """The highest memory id with a stored vector, 0 when there is none."""
    return int(conn.execute(q("mem_max_embedding_id")).fetchone()[0])


def pending_ids_between(conn: Any, after: int, upto: int) -> set[int]:
    """The memory ids in (after, upto] that have no vector yet."""
    return {int(row["id"]) for row in conn.execute(q("mem_pending_ids_between"), {"after": after, "upto": upto})}


def episodes_for_reembed(conn: Any) -> list[Any]:
    """(id, raw) of every memory, by id: what a model switch embeds again."""
    return list(conn.execute(q("mem_all_episodic_for_reembed")).fetchall())


def recreate_vector_tables(conn: Any, dim: int) -> None:
    """Drop the sqlite-vec table and the plain vectors, and create the table again for `dim` dimensions."""
    conn.execute(q("mem_drop_mem_vec"))
    conn.execute(q("mem_create_mem_vec").format(dim=int(dim)))  # the one formatted query: an int, never text
    conn.execute(q("mem_delete_embeddings"))


# --- injections and use -----------------------------------------------------------------------------


def insert_injection(conn: Any, *, injection_id: str, ts: float, turn_id: str | None, query_hash: str,
                     block_hash: str, block_text: str, memory_ids: Sequence[int], fact_ids: Sequence[int]) -> None:
    """Record one context block handed out (the anti-loop and use record)."""
    conn.execute(q("mem_insert_injection"), {
        "id": injection_id, "ts": ts, "turn_id": turn_id, "query_hash": query_hash, "block_hash": block_hash,
        "block_chars": len(block_text), "memory_ids_json": json.dumps(list(memory_ids)),
        "fact_ids_json": json.dumps(list(fact_ids)), "block_text": block_text})


def injections_for_turn(conn: Any, turn_id: str) -> list[Any]:
    """The blocks (id, block_text) handed out for one turn."""
    return list(conn.execute(q("mem_injections_for_turn"), {"turn_id": turn_id}).fetchall())


def recent_injections(conn: Any, since: float, limit: int) -> list[Any]:
    """The newest `limit` blocks (id, block_text) handed out since `since`."""
    return list(conn.execute(q("mem_recent_injections"), {"since": since, "limit": limit}).fetchall())


def injection_used_by_turn(conn: Any, turn_id: str) -> Any | None:
    """The block a turn already confirmed (id), or None."""
    return conn.execute(q("mem_injections_used_by_turn"), {"turn_id": turn_id}).fetchone()


def injection(conn: Any, injection_id: str) -> Any | None:
    """One block (id, used_at, used_turn_id), or None."""
    return conn.execute(q("mem_injection_by_id"), {"id": injection_id}).fetchone()


def newest_injection_for_turn(conn: Any, turn_id: str) -> Any | None:
    """The last block handed out for a turn (id, used_at), or None."""
    return conn.execute(q("mem_newest_injection_for_turn"), {"turn_id": turn_id}).fetchone()


def mark_injection_used(conn: Any, injection_id: str, turn_id: str, now: float) -> list[int] | None:
    """Mark a block used by a turn; its memory ids, or None when it was used meanwhile."""
    row = conn.execute(q("mem_mark_injection_used"), {"id": injection_id, "turn_id": turn_id, "now": now}).fetchone()
    return None if row is None else [int(i) for i in json.loads(row["memory_ids_json"])]


def memory_strength(conn: Any, memory_id: int) -> Any | None:
    """(ts, accessibility, last_recalled_at) of one memory, or None."""
    return conn.execute(q("mem_strength_of"), {"id": memory_id}).fetchone()


def bump_recall(conn: Any, memory_id: int, accessibility: float, now: float) -> None:
    """One more recall of a memory that a reply used, with its new accessibility."""
    conn.execute(q("mem_bump_recall"), {"id": memory_id, "accessibility": accessibility, "now": now})
