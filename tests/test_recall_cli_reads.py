"""Reading never writes: the real `anima recall` and `--batch` leave every table byte-identical, and order changes no answer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from engine.consolidate.run import consolidate_once
from engine.memory.ingest import TurnInput, record_turn
from engine.settings import Settings
from engine.store import connect
from engine.store.core import read_switches
from tests.conftest import run_anima
from tests.memory_helpers import embedder, fresh_db

pytestmark = pytest.mark.e2e

TURNS = [
    ("d01", "我住在上海徐汇", "嗯。", "2026-06-16T22:00:00+08:00"),
    ("d02", "我的猫芝麻今天去打疫苗了，一点都没哭", "芝麻好勇敢！", "2026-06-20T20:00:00+08:00"),
    ("d03", "下周我要去杭州面试，有点紧张", "你准备得很好，加油", "2026-07-01T21:00:00+08:00"),
    ("d04", "我搬到了闵行，离医院近一点", "嗯。", "2026-07-22T22:00:00+08:00"),
    ("d05", "今天学会了做红烧肉，第一次就成功了", "太厉害了", "2026-07-25T19:00:00+08:00"),
    ("d06", "芝麻最近老是挑食，只吃小鱼干", "可以换点新口味试试", "2026-07-28T20:30:00+08:00"),
]
QUERIES = ["我现在住在哪里", "芝麻打疫苗怎么样", "我去哪里面试", "我会做什么菜", "芝麻爱吃什么", "我养的猫叫什么"]
AS_OF = "2026-08-01T00:00:00+08:00"  # decay is computed at this instant, so two runs score alike


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "anima.db"
    conn = fresh_db(path)
    for turn_id, user, companion, ts in TURNS:
        record_turn(conn, embedder(), TurnInput(turn_id, user, companion, ts), 0)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), 1)  # a fact joins recall (its own hit shape)
    assert conn.execute("SELECT count(*) FROM mem_semantic").fetchone()[0] > 0
    conn.close()
    return path


def table_hashes(path: Path) -> dict[str, str]:
    """sha256 of every stored table's rows (virtual tables through their shadow tables), order-free."""
    conn = connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
                  if not (r[1] or "").upper().startswith("CREATE VIRTUAL TABLE")]
        out = {}
        for name in tables:
            rows = sorted(repr(tuple(row)) for row in conn.execute(f'SELECT * FROM "{name}"'))
            out[name] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        return out
    finally:
        conn.close()


def run_batch(db: Path, tmp_path: Path, queries: list[str], name: str) -> dict[str, Any]:
    batch = tmp_path / name
    batch.write_text("".join(json.dumps({"q": query}, ensure_ascii=False) + "\n" for query in queries), encoding="utf-8")
    result = run_anima("--db", str(db), "recall", "--batch", str(batch), "--as-of", AS_OF)
    assert result.code == 0, result.err
    answers = [json.loads(line) for line in result.out.splitlines()]
    return {answer["query"]: answer for answer in answers}


def test_recall_and_batch_leave_every_table_byte_identical_in_any_order(db: Path, tmp_path: Path) -> None:
    before = table_hashes(db)
    assert {"mem_episodic", "chat_message", "context_injection", "mem_semantic"} <= set(before)

    single = run_anima("--db", str(db), "recall", QUERIES[0])
    assert single.code == 0, single.err
    assert "fact #" in single.out  # a fact hit is printed, not a KeyError
    forward = run_batch(db, tmp_path, QUERIES * 2, "forward.jsonl")  # each query asked twice
    backward = run_batch(db, tmp_path, list(reversed(QUERIES)), "backward.jsonl")

    assert table_hashes(db) == before  # nothing counted, bumped, recorded or migrated
    assert forward == backward  # the answer to a query does not depend on what was asked before it
    assert all(answer["hits"] for answer in forward.values())
