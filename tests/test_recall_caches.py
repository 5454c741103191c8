"""The per-process caches recall keeps for big histories: the vector matrix (warmed at start) and term counts."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from engine.memory import vector_index
from engine.memory.indexer import index_all_pending
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import COMMON_TERM_FRACTION, COMMON_TERM_MIN_ROWS, TermDocCounts, common_term_filter
from engine.store import connect, transaction
from tests.api_support import HashEmbedder
from tests.memory_helpers import embedder, fresh_db


def test_warm_builds_the_index_only_when_recall_will_use_it(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "a.db")
    for i in range(3):
        record_turn(conn, embedder(), TurnInput(f"t{i}", f"第{i}次去游泳", "好棒", "2026-05-01T10:00:00+08:00"), 0)
    assert vector_index.warm(conn, index_from=5000) == 0
    assert vector_index.warm(conn, index_from=1) == 6  # both sides of three turns
    # The warmed matrix is what nearest() scans: the best match of a turn's own vector is that memory.
    vec = embedder().embed_passages(["第1次去游泳"])[0]
    top = vector_index.nearest(conn, vec, 1)
    assert conn.execute("SELECT raw FROM mem_episodic WHERE id = ?", (next(iter(top)),)).fetchone()[0] == "第1次去游泳"


def test_the_index_grows_turn_by_turn_and_stays_exact(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "grow.db")
    texts = ["周末去爬山", "晚上做了番茄炒蛋", "猫咪把杯子推下桌", "下个月搬去闵行", "开始学游泳", "读完了一本诗集"]
    for i, text in enumerate(texts):
        record_turn(conn, embedder(), TurnInput(f"t{i}", text, None, "2026-05-01T10:00:00+08:00"), 0)
        index_size = vector_index.warm(conn, index_from=1)
        assert index_size == i + 1
        # Every memory so far is still found by its own vector (rows and ids stay aligned as the buffer grows).
        for j, earlier in enumerate(texts[: i + 1]):
            top = vector_index.nearest(conn, embedder().embed_passages([earlier])[0], 1)
            assert conn.execute("SELECT turn_id FROM mem_episodic WHERE id = ?", (next(iter(top)),)).fetchone()[0] \
                == f"t{j}"


def test_appending_past_the_buffer_keeps_every_row_and_id() -> None:
    rng = np.random.default_rng(3)
    index = vector_index._Index((), 0, np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32), set())
    chunks = [(np.arange(n, n + 7, dtype=np.int64), rng.standard_normal((7, 8)).astype(np.float32))
              for n in range(0, 3500, 7)]
    for ids, rows in chunks:
        vector_index._append(index, ids, rows)
    assert index.buffer.shape[0] >= 3500 and index.size == 3500
    np.testing.assert_array_equal(index.ids, np.concatenate([c[0] for c in chunks]))
    np.testing.assert_array_equal(index.matrix, np.concatenate([c[1] for c in chunks]))


def test_term_counts_are_kept_per_file_until_the_history_grows(tmp_path: Path) -> None:
    cache = TermDocCounts()
    a, b = fresh_db(tmp_path / "a.db"), fresh_db(tmp_path / "b.db")
    counts = cache.counts_for(a, 10_000)
    assert counts is not None
    counts["游泳"] = 7
    assert cache.counts_for(a, 10_400) is counts  # < 5 % more memories: still good enough
    assert cache.counts_for(b, 10_000) is not counts  # another file never sees a's counts
    assert cache.counts_for(a, 10_600) == {}  # grown past 5 %: counted again
    assert cache.counts_for(a, 9_000) == {}  # fewer memories (a restore): counted again
    assert cache.counts_for(connect(":memory:"), 10_000) is None


def test_common_term_counts_are_read_in_one_statement_and_decide_as_one_lookup_per_term(tmp_path: Path) -> None:
    """A query's uncached term counts cost one fts5vocab statement (each one opens a cursor on the index
    structure: ~5 ms a term at 100k), and keep the terms the per-term lookups kept."""
    conn = fresh_db(tmp_path / "big.db")
    common = "喜欢 工作"  # in every row: more than COMMON_TERM_FRACTION of the history
    with transaction(conn):
        for i in range(COMMON_TERM_MIN_ROWS):
            rare = "滑翔伞" if i % 997 == 0 else f"词{i}"
            mid = conn.execute("INSERT INTO chat_message (turn_id, role, text, ts, ts_iso, origin, created_at) "
                               "VALUES (?, 'user', ?, 0, '', 'test', 0) RETURNING id", (f"t{i}", rare)).fetchone()[0]
            eid = conn.execute("INSERT INTO mem_episodic (source, message_id, turn_id, role, ts, raw, created_at) "
                               "VALUES ('chat', ?, ?, 'user', 0, ?, 0) RETURNING id", (mid, f"t{i}", rare)).fetchone()[0]
            conn.execute("INSERT INTO mem_fts (rowid, tokens) VALUES (?, ?)", (eid, f"{common} {rare}"))
    query = "我喜欢工作，周末去玩滑翔伞"
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    keep = common_term_filter(conn, COMMON_TERM_MIN_ROWS, query)
    assert keep is not None
    kept = {term: keep(term) for term in ("喜欢", "工作", "滑翔伞", "周末")}
    vocab = [s for s in statements if "mem_fts_vocab" in s and "CREATE" not in s]
    assert len(vocab) == 1
    one_by_one = {term: int((conn.execute("SELECT doc FROM temp.mem_fts_vocab WHERE term = ?", (term,)).fetchone()
                             or [0])[0]) <= COMMON_TERM_FRACTION * COMMON_TERM_MIN_ROWS for term in kept}
    assert kept == one_by_one == {"喜欢": False, "工作": False, "滑翔伞": True, "周末": True}


ROWS = 400


def test_loading_the_matrix_holds_the_vectors_about_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Built chunk by chunk into a buffer sized once: not the blobs, their join and the buffer at the same time."""
    conn, model = fresh_db(tmp_path / "big.db"), HashEmbedder()
    with transaction(conn):
        for i in range(ROWS):
            record_turn(conn, model, TurnInput(f"t{i}", f"第{i}天的日记", None, "2026-05-01T10:00:00+08:00"), 0,
                        embed=False)
    assert index_all_pending(conn, model, 0) == ROWS
    monkeypatch.setattr(vector_index, "LOAD_CHUNK_ROWS", 50)
    vector_index.forget(conn)
    tracemalloc.start()
    try:
        assert vector_index.warm(conn, index_from=1) == ROWS
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    index = vector_index._current(conn)
    chunk = 50 * index.buffer.shape[1] * 4
    assert peak < index.buffer.nbytes + index.id_buffer.nbytes + 3 * chunk  # the old build: + 2 x 0.6 MB of blobs
    for j in (0, 49, 50, ROWS - 1):  # rows and ids aligned across chunk boundaries
        top = vector_index.nearest(conn, model.embed_passages([f"第{j}天的日记"])[0], 1)
        assert conn.execute("SELECT turn_id FROM mem_episodic WHERE id = ?", (next(iter(top)),)).fetchone()[0] == f"t{j}"
    vector_index.forget(conn)
