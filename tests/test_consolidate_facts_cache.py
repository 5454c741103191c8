"""Fact recall's cached vector matrix: one load per database state, and always current after facts change."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.consolidate import facts_recall
from engine.consolidate.facts_recall import fact_hits
from engine.store import connect
from engine.store.queries import q
from tests.memory_helpers import fresh_db

DIM = 8


def unit(i: int) -> np.ndarray:
    vec = np.zeros(DIM, dtype=np.float32)
    vec[i] = 1.0
    return vec


def add_fact(conn, text: str, axis: int, valid_from: float) -> int:
    fact_id = conn.execute(q("insert_fact"), {
        "subject": "user", "key": "home", "statement": f"2026-08-01 用户说：{text}", "valid_from": valid_from,
        "valid_to": None, "recorded_at": 0.0, "superseded_by": None, "evidence_json": "[]", "importance": 5.0,
        "origin": "test"}).fetchone()[0]
    conn.execute(q("insert_fact_vec"), {"fact_id": fact_id, "model": "test", "embedding": unit(axis).tobytes()})
    return int(fact_id)


def texts(conn, axis: int, **kw) -> list[str]:
    return [h.text.partition("：")[2] for h in fact_hits(conn, unit(axis), "q", k=5, now=100.0, **kw)]


def test_recall_loads_the_vectors_once_and_reloads_only_when_facts_change(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "cache.db")
    add_fact(conn, "我住在徐汇", 0, 10.0)
    add_fact(conn, "我养了一只仓鼠", 1, 11.0)
    loads = facts_recall.LOADS["count"]
    for _ in range(20):
        assert texts(conn, 0) == ["我住在徐汇"]
    assert facts_recall.LOADS["count"] == loads + 1

    # A new fact is seen at once.
    new = add_fact(conn, "我搬到了闵行", 0, 20.0)
    assert texts(conn, 0) == ["我住在徐汇", "我搬到了闵行"]
    # Superseding (valid_to set, no new row) is seen at once too.
    conn.execute(q("retire_fact"), {"id": 1, "valid_to": 20.0, "superseded_by": new})
    assert texts(conn, 0) == ["我搬到了闵行"]
    assert texts(conn, 0, as_of=15.0) == ["我住在徐汇"]
    assert facts_recall.LOADS["count"] == loads + 3
    # Merging evidence changes no vector: no reload, and the hit reads the current row.
    conn.execute(q("merge_into_fact"), {"id": new, "evidence_json": "[]", "importance": 9.0})
    texts(conn, 0)
    assert facts_recall.LOADS["count"] == loads + 3


def test_a_change_made_by_another_connection_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    reader = fresh_db(path)
    writer = connect(path)
    add_fact(writer, "我对海鲜过敏", 2, 10.0)
    assert texts(reader, 2) == ["我对海鲜过敏"]
    add_fact(writer, "我对花粉过敏", 2, 11.0)
    assert texts(reader, 2) == ["我对海鲜过敏", "我对花粉过敏"]
    writer.close()


def test_two_databases_do_not_share_a_matrix(tmp_path: Path) -> None:
    one, two = fresh_db(tmp_path / "one.db"), fresh_db(tmp_path / "two.db")
    add_fact(one, "我住在徐汇", 3, 10.0)
    add_fact(two, "我住在闵行", 3, 10.0)  # same ids, same counts: only the file tells them apart
    assert texts(one, 3) == ["我住在徐汇"] and texts(two, 3) == ["我住在闵行"]


def test_vectors_of_another_dimension_are_ignored_not_an_error(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "dim.db")
    add_fact(conn, "我住在徐汇", 0, 10.0)
    query = np.ones(DIM * 2, dtype=np.float32) / np.sqrt(DIM * 2)
    assert fact_hits(conn, query, "q", k=5, now=100.0) == []
