"""The per-file caches (engine/store/caches.py) follow one rule: one value per file identity, part and fingerprint.

A file replaced at the same path (what `anima restore` does) is a different file even when every
count and max id agrees; two in-memory databases never share or evict each other's values.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engine.consolidate.facts_recall import fact_hits
from engine.errors import ConfigError
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
    cache: caches.FileCache[int] = caches.FileCache("test")
    first, second = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    assert cache.get(first, 0, "same", lambda: 1) == 1
    assert cache.get(second, 0, "same", lambda: 2) == 2
    assert cache.get(first, 0, "same", lambda: 99) == 1 and cache.builds == 2
    first.close()
    second.close()


def _blob(kib: int) -> np.ndarray:
    return np.zeros(kib * 1024, dtype=np.uint8)


def test_past_the_budget_the_least_recently_used_file_goes_first_in_every_cache(tmp_path: Path) -> None:
    budget = caches.CacheBudget(300 * 1024)
    matrices, counts = caches.FileCache("m", budget), caches.FileCache("c", budget)
    a, b, c = (fresh_db(tmp_path / f"{n}.db") for n in "abc")
    matrices.get(a, 0, "fp", lambda: _blob(100))
    counts.get(a, 0, "fp", lambda: _blob(20))
    matrices.get(b, 0, "fp", lambda: _blob(100))
    assert matrices.get(a, 0, "fp", lambda: _blob(1)).nbytes == 100 * 1024  # a hit: a is now the most recent
    matrices.get(c, 0, "fp", lambda: _blob(100))  # 320 KiB > 300: b, the least recently used, goes
    assert matrices.peek(b, 0) is None
    assert matrices.peek(a, 0) is not None and counts.peek(a, 0) is not None and matrices.peek(c, 0) is not None
    counts.get(c, 0, "fp", lambda: _blob(90))  # over again: a goes, from both caches at once
    assert matrices.peek(a, 0) is None and counts.peek(a, 0) is None
    assert matrices.evictions == 2 and counts.evictions == 1
    for conn in (a, b, c):
        conn.close()


def test_the_bytes_held_never_exceed_the_budget_whatever_the_order_of_reads(tmp_path: Path) -> None:
    budget = caches.CacheBudget(256 * 1024)
    cache: caches.FileCache[np.ndarray] = caches.FileCache("m", budget)
    conns = [fresh_db(tmp_path / f"{n}.db") for n in range(6)]
    rng = np.random.default_rng(7)
    for _ in range(60):
        n = int(rng.integers(0, 6))
        cache.get(conns[n], int(rng.integers(0, 2)), "fp", lambda n=n: _blob(30 + 10 * n))
        held = cache.stats()
        assert held.bytes_held == budget.bytes_held <= 256 * 1024
        assert held.bytes_held == sum(caches.value_bytes(v) for _, v in cache._values.values())
    assert cache.evictions > 0 and cache.stats().files < 6
    for conn in conns:
        conn.close()


def test_a_value_bigger_than_the_whole_budget_is_built_used_and_not_kept(tmp_path: Path) -> None:
    cache: caches.FileCache[np.ndarray] = caches.FileCache("m", caches.CacheBudget(64 * 1024))
    conn = fresh_db(tmp_path / "a.db")
    small = cache.get(conn, "small", "fp", lambda: _blob(10))
    assert cache.get(conn, "big", "fp", lambda: _blob(100)).nbytes == 100 * 1024
    assert cache.get(conn, "big", "fp", lambda: _blob(100)).nbytes == 100 * 1024
    assert cache.builds == 3 and cache.rejected == 2 and cache.evictions == 0
    assert cache.get(conn, "small", "fp", lambda: _blob(1)) is small  # the small one stayed
    conn.close()


def test_a_value_grown_in_place_past_the_budget_is_let_go_at_its_next_read(tmp_path: Path) -> None:
    budget = caches.CacheBudget(64 * 1024)
    cache: caches.FileCache[dict[str, np.ndarray]] = caches.FileCache("m", budget)
    conn = fresh_db(tmp_path / "a.db")
    grows: dict[str, np.ndarray] = {"rows": _blob(10)}
    cache.put(conn, 0, "fp", grows)
    grows["rows"] = _blob(100)  # a holder growing its value in place (the vector matrix gains rows)
    held = cache.peek(conn, 0)
    assert held is not None and held[1] is grows  # this read is served...
    assert cache.peek(conn, 0) is None and budget.bytes_held == 0  # ...and it is not kept
    conn.close()


def test_a_hit_is_a_hit_and_a_stale_peek_replaced_is_a_miss(tmp_path: Path) -> None:
    cache: caches.FileCache[str] = caches.FileCache("m")
    conn = fresh_db(tmp_path / "a.db")
    cache.get(conn, 0, 1, lambda: "one")
    cache.get(conn, 0, 1, lambda: "never built")
    cache.get(conn, 0, 1, lambda: "never built")
    assert (cache.stats().hits, cache.stats().misses) == (2, 1)
    assert cache.peek(conn, 0) == (1, "one")  # a holder judging freshness itself, and keeping it: a hit
    assert cache.peek(conn, 0) is not None
    cache.put(conn, 0, 2, "two")  # ...this time it judged the value stale and rebuilt it: that read was a miss
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.files) == (3, 2, 1, 1)
    conn.close()


def test_the_real_holders_count_hits_under_the_shared_budget(tmp_path: Path) -> None:
    conn = _one_turn_db(tmp_path / "a.db", "周末去爬山")
    before = caches.stats()["vector_index"]
    vector_index.warm(conn, index_from=1)
    vector_index.warm(conn, index_from=1)
    vector_index.warm(conn, index_from=1)
    after = caches.stats()
    assert after["vector_index"].misses - before.misses == 1
    assert after["vector_index"].hits - before.hits == 2
    assert after["total"].budget_bytes == caches.budget_bytes() == caches.DEFAULT_BUDGET_BYTES
    assert after["total"].bytes_held >= caches.value_bytes(caches.file_cache("vector_index").peek(conn, 0)[1])
    caches.drop_file(conn)
    conn.close()


def test_value_bytes_counts_a_matrix_whole_and_a_dict_by_its_length() -> None:
    matrix = np.zeros((1500, 384), dtype=np.float32)  # the vector index's buffer, spare capacity included
    assert matrix.nbytes <= caches.value_bytes(matrix) < matrix.nbytes + 1024
    small = {f"词{n}": n for n in range(100)}
    big = {f"词{n}": n for n in range(10_000)}
    assert 50 * caches.value_bytes(small) < caches.value_bytes(big) < 200 * caches.value_bytes(small)


def test_lowering_the_budget_evicts_now_and_a_bad_budget_is_refused(tmp_path: Path) -> None:
    budget = caches.CacheBudget(1024 * 1024)
    cache: caches.FileCache[np.ndarray] = caches.FileCache("m", budget)
    a, b = fresh_db(tmp_path / "a.db"), fresh_db(tmp_path / "b.db")
    cache.get(a, 0, "fp", lambda: _blob(100))
    cache.get(b, 0, "fp", lambda: _blob(100))
    budget.set_budget(150 * 1024)
    assert cache.peek(a, 0) is None and cache.peek(b, 0) is not None
    for bad in (-1, 1.5, True):
        with pytest.raises(ConfigError, match="cache_budget_mb"):
            budget.set_budget(bad)  # type: ignore[arg-type]
    assert budget.budget_bytes == 150 * 1024
    a.close()
    b.close()


def test_a_connection_page_cache_is_capped_by_cache_kib(tmp_path: Path) -> None:
    capped = connect(tmp_path / "a.db", cache_kib=256)
    default = connect(tmp_path / "a.db")
    try:
        assert capped.execute("PRAGMA cache_size").fetchone()[0] == -256
        assert default.execute("PRAGMA cache_size").fetchone()[0] == -2000  # SQLite's default, untouched
    finally:
        capped.close()
        default.close()
    for bad in (-1, "64", True):
        with pytest.raises(ConfigError, match="KiB"):
            connect(tmp_path / "b.db", cache_kib=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "b.db").exists()


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
