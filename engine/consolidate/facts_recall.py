"""Facts read back: the `anima facts` listing (optionally as of a date) and facts as their own recall hits.

A fact hit carries its evidence turns re-read from chat_message, so the front end sees the
user's own words behind it. Superseded facts are left out unless `as_of` asks what was true
then (valid time: begun by `as_of`, not ended by it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.store import facts as fact_store
from engine.store.caches import FileCache, file_cache


@dataclass(frozen=True)
class FactHit:
    """A fact as a recall hit: its own id (`fact_id`, a mem_semantic id; it has no memory_id) and its evidence."""

    fact_id: int  # mem_semantic id (recall collects these as fact_ids)
    key: str
    text: str  # the statement: date + the user's sentence, written by the host
    score: float
    valid_from: float
    valid_to: float | None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    source: str = "fact"
    turn_id: str | None = None
    message_id: int | None = None
    role: str | None = None
    ts: str = ""
    ts_unix: float = 0.0
    relevance: float = 0.0

    @property
    def evidence_turn_ids(self) -> list[str]:
        """The turns this fact rests on: a block that shows the fact shows none of them again."""
        return [turn["turn_id"] for turn in self.evidence]

    def to_json(self) -> dict[str, Any]:
        return {"source": "fact", "fact_id": self.fact_id, "key": self.key, "text": self.text,
                "score": round(self.score, 4), "valid_from": self.valid_from, "valid_to": self.valid_to,
                "turn_id": self.turn_id, "ts": self.ts, "evidence": self.evidence}


def facts_rows(conn: Any, as_of: float | None = None) -> list[Any]:
    return fact_store.active_facts(conn) if as_of is None else fact_store.facts_as_of(conn, as_of)


def list_facts(conn: Any, as_of: float | None = None, include_history: bool = False) -> list[dict[str, Any]]:
    """Active facts (or those true at `as_of`); with include_history, every fact ever written."""
    rows = fact_store.all_facts(conn) if include_history else facts_rows(conn, as_of)
    out = []
    for row in rows:
        out.append({"id": row["id"], "subject": row["subject"], "key": row["key"], "statement": row["statement"],
                    "valid_from": row["valid_from"], "valid_to": row["valid_to"], "recorded_at": row["recorded_at"],
                    "superseded_by": row["superseded_by"], "evidence": json.loads(row["evidence_json"]),
                    "importance": row["importance"], "origin": row["origin"]})
    return out


def evidence_turns(conn: Any, memory_ids: list[int]) -> list[dict[str, Any]]:
    """Re-read each evidence memory's whole source turn (both sides) from chat_message."""
    turns = []
    seen: set[str] = set()
    for row in fact_store.evidence_episodes(conn, memory_ids):
        if row["source"] != "chat" or not row["turn_id"] or row["turn_id"] in seen:
            continue
        seen.add(row["turn_id"])
        messages = [{"role": m["role"], "text": m["text"], "ts": m["ts_iso"]}
                    for m in fact_store.evidence_messages(conn, row["turn_id"])]
        turns.append({"turn_id": row["turn_id"], "messages": messages})
    return turns


@dataclass(frozen=True)
class FactMatrix:
    """Every fact's vector as one matrix, with valid time per row, for one database state and one dimension."""

    version: tuple[Any, ...]
    ids: np.ndarray  # (n,) fact ids
    valid_from: np.ndarray  # (n,)
    valid_to: np.ndarray  # (n,) +inf while active
    vectors: np.ndarray = field(repr=False)  # (n, dim) float32


# One matrix per database file and dimension, owned by engine/store/caches.py (file identity + fingerprint).
_MATRICES: FileCache[FactMatrix] = file_cache("fact_matrix")
LOADS = {"count": 0}  # how many times the matrix was (re)built: for tests and the bench


def fact_matrix(conn: Any, dim: int) -> FactMatrix:
    """The cached matrix, rebuilt only when the facts' fingerprint (counts, max ids, valid-time sums) moves.

    Facts are append-only and change only by closing valid_to, so counts, max(id) and the sum of
    valid_to catch every change that matters to recall; evidence (changed by merges) is re-read per hit.
    """
    version = fact_store.facts_fingerprint(conn)
    return _MATRICES.get(conn, dim, version, lambda: _load_matrix(conn, dim, version))


def _load_matrix(conn: Any, dim: int, version: tuple[Any, ...]) -> FactMatrix:
    LOADS["count"] += 1
    ids, starts, ends, blobs = [], [], [], []
    for row in fact_store.fact_vectors(conn):
        if len(row["embedding"]) != 4 * dim:
            continue  # another model's vector: not comparable with this query
        ids.append(row["id"])
        starts.append(row["valid_from"])
        ends.append(np.inf if row["valid_to"] is None else row["valid_to"])
        blobs.append(row["embedding"])
    vectors = (np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim) if blobs
               else np.zeros((0, dim), dtype=np.float32))
    return FactMatrix(version, np.asarray(ids, dtype=np.int64), np.asarray(starts, dtype=np.float64),
                      np.asarray(ends, dtype=np.float64), vectors)


def fact_hits(conn: Any, query_embedding: Any, query_text: str, *, k: int, now: float,
              as_of: float | None = None, vector_floor: float = 0.7, min_score: float = 0.35) -> list[FactHit]:
    """The k facts nearest the query, with evidence turns; superseded ones only for `as_of`.

    The score is the cosine rescaled like recall's vector lane ((cos - floor) / (1 - floor), [memory]
    vector_floor), so fact hits and episode hits sort on one scale. One matrix product over the
    cached fact vectors; only the k winners are read back from the database.
    """
    if query_embedding is None or k <= 0:
        return []
    query = np.asarray(query_embedding, dtype=np.float32).reshape(-1)
    matrix = fact_matrix(conn, query.shape[0])
    if matrix.ids.size == 0:
        return []
    if as_of is None:
        live = np.isinf(matrix.valid_to)
    else:
        live = (matrix.valid_from <= as_of) & (matrix.valid_to > as_of)
    scores = np.maximum(0.0, (matrix.vectors @ query - vector_floor) / (1.0 - vector_floor))
    scores[~live] = -1.0
    eligible = np.flatnonzero(scores >= min_score)
    if eligible.size == 0:
        return []
    # Highest score first; ties by fact id, as the old per-row scan ordered them.
    order = eligible[np.lexsort((matrix.ids[eligible], -scores[eligible]))][:k]
    wanted = [int(matrix.ids[i]) for i in order]
    rows = fact_store.facts_by_ids(conn, wanted)
    hits: list[FactHit] = []
    said: set[str] = set()
    for index in order:
        row = rows.get(int(matrix.ids[index]))
        if row is None or row["statement"] in said:
            continue  # one sentence kept under two keys (job and work_shift) is one hit
        said.add(row["statement"])
        score = float(scores[index])
        evidence = evidence_turns(conn, json.loads(row["evidence_json"]))
        first = evidence[0] if evidence else None
        hits.append(FactHit(fact_id=row["id"], key=row["key"], text=row["statement"], score=score,
                            valid_from=row["valid_from"], valid_to=row["valid_to"], evidence=evidence,
                            turn_id=first["turn_id"] if first else None,
                            ts=row["statement"][:10], ts_unix=row["valid_from"], relevance=score))
    return hits
