"""anima reembed: each distinct text embedded once, resumable after an interruption, same vectors as a clean run
(issue 27); refused next to a running daemon is tests/e2e/test_live_writers.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.memory.ingest import TurnInput, record_turns_bulk
from engine.memory.reembed import checkpoint_path, reembed
from tests.memory_helpers import embedder, fresh_db

NOW = 1796083200.0
REPEATED = ["好的", "晚安", "嗯嗯"]


class Counting:
    """The real model, counting the texts it is asked to embed; `fail_after` batches, it raises (a kill)."""

    def __init__(self, inner: Any, fail_after: int | None = None):
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.texts: list[str] = []
        self.fail_after = fail_after

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.texts) >= self.fail_after * 4:
            raise KeyboardInterrupt
        self.texts.extend(texts)
        return np.asarray(self.inner.embed_passages(texts))


def history(conn: Any) -> None:
    turns = [TurnInput(f"t{n}", f"第{n}天我们聊了第{n}件事" if n % 2 else REPEATED[n % 3], REPEATED[(n + 1) % 3],
                       "2026-06-01T22:00:00+08:00") for n in range(24)]
    record_turns_bulk(conn, embedder(), turns, NOW)


def vectors(conn: Any) -> dict[int, bytes]:
    return {row[0]: bytes(row[1]) for row in conn.execute("SELECT rowid, embedding FROM mem_embedding")}


def distinct_texts(conn: Any) -> int:
    return int(conn.execute("SELECT count(DISTINCT raw) FROM mem_episodic").fetchone()[0])


def test_identical_texts_are_embedded_once(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "anima.db")
    history(conn)
    counting = Counting(embedder())
    report = reembed(conn, counting, NOW)
    memories = conn.execute("SELECT count(*) FROM mem_episodic").fetchone()[0]
    assert report.memories == memories and report.distinct == distinct_texts(conn) < memories
    assert len(counting.texts) == len(set(counting.texts)) == report.distinct


def test_an_interrupted_reembed_resumes_from_its_checkpoint_with_the_same_vectors(tmp_path: Path) -> None:
    clean = fresh_db(tmp_path / "clean.db")
    history(clean)
    reembed(clean, embedder(), NOW)
    expected = vectors(clean)

    db = tmp_path / "anima.db"
    conn = fresh_db(db)
    history(conn)
    before = vectors(conn)
    ticks = iter(range(0, 10_000, 60))  # every batch is a minute later: each one is checkpointed
    first = Counting(embedder(), fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        reembed(conn, first, NOW, batch=4, checkpoint=checkpoint_path(db), clock=lambda: float(next(ticks)))
    assert checkpoint_path(db).exists() and vectors(conn) == before  # nothing swapped yet
    second = Counting(embedder())
    report = reembed(conn, second, NOW, batch=4, checkpoint=checkpoint_path(db))
    assert report.resumed == len(first.texts) > 0
    assert len(second.texts) == report.distinct - report.resumed  # only what the first run had not done
    assert not checkpoint_path(db).exists()
    got = vectors(conn)
    assert set(got) == set(expected)
    for key, blob in expected.items():
        np.testing.assert_allclose(np.frombuffer(got[key], np.float32), np.frombuffer(blob, np.float32), atol=1e-5)


def test_forgetting_a_turn_removes_an_interrupted_reembeds_checkpoint(tmp_path: Path) -> None:
    """Its vectors may be of the forgotten text: losing the progress is the price of forgetting it for good."""
    from daemon.cli import main as cli_main

    db = tmp_path / "anima.db"
    conn = fresh_db(db)
    history(conn)
    ticks = iter(range(0, 10_000, 60))
    with pytest.raises(KeyboardInterrupt):
        reembed(conn, Counting(embedder(), fail_after=1), NOW, batch=4, checkpoint=checkpoint_path(db),
                clock=lambda: float(next(ticks)))
    conn.close()
    assert checkpoint_path(db).exists()
    assert cli_main(["--db", str(db), "forget", "--turn", "t1"]) == 0
    assert not checkpoint_path(db).exists()
