"""Accessors the recall lanes read (vector, keyword, time window, the gate): reads only, one named query each.

Recall never writes (engine/memory/recall.py says why); the one statement here that is not a
SELECT creates the session's temp fts5vocab view, which touches no stored row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from engine.store.queries import q


def nearest_vectors(conn: Any, embedding: bytes, k: int) -> list[Any]:
    """(id, distance) of the k nearest memories by sqlite-vec's exact cosine scan."""
    return list(conn.execute(q("mem_vec_knn"), {"embedding": embedding, "k": k}).fetchall())


def ids_in_window(conn: Any, start: float, end: float, cap: int) -> list[int]:
    """Chat memory ids whose message time is in [start, end), newest first, at most `cap`."""
    return [row["id"] for row in conn.execute(q("mem_ids_in_window"), {"start": start, "end": end, "cap": cap})]


def keyword_search(conn: Any, match: str, k: int) -> set[int]:
    """The ids of the k best memories for an FTS5 MATCH expression."""
    return {row["id"] for row in conn.execute(q("mem_fts_search"), {"match": match, "k": k})}


def open_term_vocabulary(conn: Any) -> None:
    """Create (if absent) this connection's temp fts5vocab view of the keyword index."""
    conn.execute(q("mem_create_vocab"))


def terms_doc_counts(conn: Any, terms: Sequence[str]) -> dict[str, int]:
    """term -> how many memories hold it, for the terms found (one statement for all)."""
    return {row["term"]: int(row["doc"]) for row in
            conn.execute(q("mem_terms_doc_counts"), {"terms": json.dumps(list(terms), ensure_ascii=False)})}


def term_doc_count(conn: Any, term: str) -> int:
    """How many memories hold `term` (0 when none)."""
    row = conn.execute(q("mem_term_doc_count"), {"term": term}).fetchone()
    return 0 if row is None else int(row[0])


def gated_rows(conn: Any, ids: Sequence[int], as_of: float) -> list[Any]:
    """The candidates that pass the source gate (sent chat, told life, no echo, nothing after `as_of`), full rows."""
    return list(conn.execute(q("mem_gated_rows"), {"ids": json.dumps(list(ids)), "as_of": as_of}).fetchall())


def stored_tokens(conn: Any, ids: Sequence[int]) -> Iterator[Any]:
    """(id, tokens) of the candidates' keyword rows: the terms ingest stored, space-separated."""
    return iter(conn.execute(q("mem_fts_tokens_of"), {"ids": json.dumps(list(ids))}))
