"""The per-file caches (engine/store/caches.py) follow one rule: one value per file identity, part and fingerprint.

A file replaced at the same path (what `anima restore` does) is a different file even when every
count and max id agrees; two in-memory databases never share or evict each other's values.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from engine.consolidate.facts_recall import fact_hits
from engine.memory import vector_index
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import TermDocCounts
from engine.store import caches, connect
from tests.memory_helpers import embedder, fresh_db
from tests.test_consolidate_facts_cache import add_fact, unit


def test_a_file_replaced_at_the_same_path_is_not_served_the_old_fact_matrix(tmp_path: Path) -> None:
    here, other = tmp_path / "her.db", tmp_path / "snapshot.db"
    conn, snap = fresh_db(here), fresh_db(other)
    add_fact(conn, "我住在徐汇", 3, 10.0)
    add_fact(snap, "我住在闵行", 4, 10.0)  # same id, count and valid time: the same fingerprint, another vector
    snap.close()
    assert [h.text[-4:] for h in fact_hits(conn, unit(3), "q", k=5, now=100.0)] == ["住在徐汇"]
    conn.close()
    os.replace(other, here)
    restored = connect(here)
    try:
        assert [h.text[-4:] for h in fact_hits(restored, unit(4), "q", k=5, now=100.0)] == ["住在闵行"]
        assert fact_hits(restored, unit(3), "q", k=5, now=100.0) == []
    finally:
        restored.close()


def test_one_build_per_fingerprint_and_a_new_one_when_it_moves(tmp_path: Path) -> None:
    cache: caches.FileCache[str] = caches.FileCache("test")
    conn = fresh_db(tmp_path / "a.db")
    built: list[str] = []

    def build(value: str) -> str:
        built.append(value)
        return value

    assert [cache.get(conn, "part", (1,), lambda: build("one")) for _ in range(3)] == ["one"] * 3
    assert cache.get(conn, "part", (2,), lambda: build("two")) == "two"
    assert cache.get(conn, "other", (2,), lambda: build("other")) == "other"
    assert built == ["one", "two", "other"] and cache.builds == 3 and len(cache) == 2
    cache.drop(conn)
    assert len(cache) == 0
    conn.close()


def test_in_memory_databases_neither_share_nor_evict_each_other() -> None:
    cache: caches.FileCache[int] = caches.FileCache("test", max_files=8)
    first, second = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    assert cache.get(first, 0, "same", lambda: 1) == 1
    assert cache.get(second, 0, "same", lambda: 2) == 2
    assert cache.get(first, 0, "same", lambda: 99) == 1 and cache.builds == 2
    first.close()
    second.close()


def test_past_max_files_the_oldest_file_goes_first(tmp_path: Path) -> None:
    cache: caches.FileCache[str] = caches.FileCache("test", max_files=2)
    conns = [fresh_db(tmp_path / f"{n}.db") for n in range(3)]
    for n, conn in enumerate(conns):
        cache.get(conn, 0, "fp", lambda n=n: f"file {n}")
    assert cache.get(conns[2], 0, "fp", lambda: "rebuilt") == "file 2"
    assert cache.get(conns[0], 0, "fp", lambda: "rebuilt") == "rebuilt"
    for conn in conns:
        conn.close()


def test_drop_file_empties_every_registered_cache_of_that_file(tmp_path: Path) -> None:
    one, two = fresh_db(tmp_path / "one.db"), fresh_db(tmp_path / "two.db")
    matrices = caches.file_cache("fact_matrix")
    assert "fact_matrix" in caches.caches() and caches.file_cache("fact_matrix") is matrices
    matrices.get(one, "t", "fp", lambda: "one")
    matrices.get(two, "t", "fp", lambda: "two")
    caches.drop_file(one)
    assert matrices.get(one, "t", "fp", lambda: "again") == "again"
    assert matrices.get(two, "t", "fp", lambda: "again") == "two"
    caches.drop_file(one)
    caches.drop_file(two)
    one.close()
    two.close()


def _one_turn_db(path: Path, text: str) -> sqlite3.Connection:
    conn = fresh_db(path)
    record_turn(conn, embedder(), TurnInput("t0", text, None, "2026-05-01T10:00:00+08:00"), 0)
    return conn


def test_a_file_replaced_at_the_same_path_is_not_served_the_old_vector_matrix(tmp_path: Path) -> None:
    here, other = tmp_path / "her.db", tmp_path / "snapshot.db"
    conn = _one_turn_db(here, "周末去爬山")
    _one_turn_db(other, "晚上做了番茄炒蛋").close()  # same id, stamp and forget generation: the same fingerprint
    old_vec, new_vec = embedder().embed_passages(["周末去爬山", "晚上做了番茄炒蛋"])
    assert max(vector_index.nearest(conn, old_vec, 1).values()) > 0.99
    conn.close()
    os.replace(other, here)
    restored = connect(here)
    try:
        [(memory_id, cosine)] = vector_index.nearest(restored, new_vec, 1).items()
        assert cosine > 0.99  # the restored file's own vector, not the old matrix's row
        assert restored.execute("SELECT raw FROM mem_episodic WHERE id = ?", (memory_id,)).fetchone()[0] \
            == "晚上做了番茄炒蛋"
        # The replaced file's matrix was dropped: one value left for this path (other tests' files may be cached).
        held = [key for key in caches.file_cache("vector_index")._values if key[0][0] == str(here.resolve())]
        assert len(held) == 1
    finally:
        caches.drop_file(restored)
        restored.close()


def test_drop_file_empties_the_vector_matrix_and_forget_does_too(tmp_path: Path) -> None:
    matrices = caches.file_cache("vector_index")
    conn = _one_turn_db(tmp_path / "a.db", "开始学游泳")
    vector_index.warm(conn, index_from=1)
    assert matrices.peek(conn, 0) is not None
    caches.drop_file(conn)
    assert matrices.peek(conn, 0) is None
    vector_index.warm(conn, index_from=1)
    vector_index.forget(conn)
    assert matrices.peek(conn, 0) is None
    conn.close()


def test_term_counts_follow_the_file_identity_and_their_drop(tmp_path: Path) -> None:
    counts = TermDocCounts(caches.FileCache("test"))
    here, other = tmp_path / "her.db", tmp_path / "snapshot.db"
    conn, snap = fresh_db(here), fresh_db(other)
    first = counts.counts_for(conn, 10_000)
    assert first is not None
    first["游泳"] = 7
    assert counts.counts_for(conn, 10_000) is first
    conn.close()
    snap.close()
    os.replace(other, here)
    restored = connect(here)
    try:
        assert counts.counts_for(restored, 10_000) == {}  # same max id, another file: counted again
        counts._cache.drop(restored)
        assert counts._cache.peek(restored, 0) is None
    finally:
        restored.close()
