"""Lagging vectors: a turn written with embed=False is durable and keyword-recallable at once, vector-recallable once indexed."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daemon.cli import main as cli_main
from daemon.memory_component import MemoryComponent
from engine.memory import vector_index
from engine.memory.importer import import_history
from engine.memory.indexer import Drain, count_pending, index_all_pending, index_pending, pending_memory_ids
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import params_from_settings, recall, vector_lane
from engine.store import connect
from tests.api_support import ApiHarness, HashEmbedder, turn
from tests.memory_helpers import ON, SETTINGS, embedder, fresh_db

NOW = 1800000000.0
SEED = Path(__file__).resolve().parent / "fixtures" / "small_history.jsonl"  # written for these tests
PARAPHRASE = "之前淘的那本诗歌选集是什么样子的"  # no keyword of t1 beyond 诗: the vector lane finds it
VECTOR_ONLY = replace(params_from_settings(SETTINGS), text_weight=0.0, vector_weight=1.0)


def count(conn: Any, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def turn_ids(conn: Any, query: str, **kw: Any) -> list[str]:
    result = recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=NOW, **kw)
    return [hit.turn_id for hit in result.hits]


def test_deferred_turn_is_durable_and_keyword_recallable_then_vector_recallable(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "anima.db")
    summary = import_history(conn, embedder(), SEED, NOW, embed=False)
    assert summary["vectors_pending"] == summary["new_memories"] > 0
    assert count(conn, "mem_vec") == 0 and count(conn, "mem_embedding") == 0
    assert count(conn, "mem_fts") == count(conn, "mem_episodic") == count_pending(conn)

    assert "t1" in turn_ids(conn, "诗集")  # the keyword lane answers before any vector exists
    t1 = conn.execute("SELECT id FROM mem_episodic WHERE turn_id = 't1' AND role = 'user'").fetchone()[0]
    query_vec = embedder().embed_queries([PARAPHRASE])[0]
    assert vector_lane(conn, query_vec, 3, index_from=1 << 62) == {}

    while index_pending(conn, embedder(), limit=4, now=NOW):
        pass
    assert count_pending(conn) == 0 and pending_memory_ids(conn, 10) == []
    assert count(conn, "mem_vec") == count(conn, "mem_embedding") == count(conn, "mem_episodic")
    assert t1 in vector_lane(conn, query_vec, 3, index_from=1 << 62)
    assert t1 in vector_lane(conn, query_vec, 3, index_from=0)  # the RAM index agrees
    assert "t1" in turn_ids(conn, PARAPHRASE, k=3, params=VECTOR_ONLY)
    vector_index.forget(conn)


def test_record_turn_without_embedding_skips_the_model_and_stays_idempotent(tmp_path: Path) -> None:
    class NoModel(HashEmbedder):
        def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
            raise AssertionError("embed=False must not call the model")

    conn = fresh_db(tmp_path / "anima.db")
    first = record_turn(conn, NoModel(), TurnInput("t1", "我养了一只猫叫团子", "好可爱", "2026-06-01T22:00:00+08:00"),
                        NOW, embed=False)
    again = record_turn(conn, NoModel(), TurnInput("t1", "我养了一只猫叫团子", "好可爱", "2026-06-01T22:00:00+08:00"),
                        NOW, embed=False)
    assert first.created and not again.created
    assert pending_memory_ids(conn, 10) == first.memory_ids
    assert conn.execute("SELECT name FROM embedding_model").fetchone()[0] == "test-hash-384"


def test_rows_left_pending_by_a_crash_are_indexed_by_the_next_drain(tmp_path: Path) -> None:
    path = tmp_path / "anima.db"
    conn = fresh_db(path)
    record_turn(conn, HashEmbedder(), TurnInput("t1", "周末去爬山", "记得带水", "2026-06-01T10:00:00+08:00"), NOW)
    lost = record_turn(conn, HashEmbedder(), TurnInput("t2", "我被裁员了", "我在这里", "2026-06-01T11:00:00+08:00"),
                       NOW, embed=False)
    conn.close()  # the process dies before its indexer ran

    conn = connect(path)
    drain = Drain()  # a new process: its watermark starts at 0
    rows, high = drain.take(conn, 32)
    assert [row["id"] for row in rows] == lost.memory_ids
    assert index_all_pending(conn, HashEmbedder(), NOW) == 2
    drain.done([], high, 32)
    assert drain.pending(conn) == 0 and count_pending(conn) == 0


def test_ram_index_picks_up_vectors_that_arrive_out_of_id_order(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "anima.db")
    model = HashEmbedder()
    late = record_turn(conn, model, TurnInput("t1", "蓝色封面的诗集", None, "2026-06-01T10:00:00+08:00"), NOW,
                       embed=False).memory_ids[0]
    record_turn(conn, model, TurnInput("t2", "周末去爬山", None, "2026-06-01T11:00:00+08:00"), NOW)
    query = model.embed_queries(["蓝色封面的诗集"])[0]
    assert late not in vector_index.nearest(conn, query, 5)  # built while t1 had no vector
    assert index_pending(conn, model, limit=8, now=NOW) == 1
    found = vector_index.nearest(conn, query, 5)
    assert found[late] == pytest.approx(1.0, abs=1e-5)
    vector_index.forget(conn)


class GatedEmbedder(HashEmbedder):
    """Passage embedding blocks until the test opens the gate (stands for the 20-40 ms e5 call, made long)."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if not self.gate.wait(timeout=30):
            raise TimeoutError("gate never opened")
        return super().embed_passages(texts)


async def health_pending(api: ApiHarness) -> int:
    status, body = await api.call("GET", "/v1/health")
    assert status == 200
    return int(body["vectors_pending"])


async def wait_for_no_pending(api: ApiHarness, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while await health_pending(api) != 0:
        assert asyncio.get_running_loop().time() < deadline, "indexer never drained"
        await asyncio.sleep(0.01)


async def gated_memory(tmp_path: Path) -> tuple[ApiHarness, GatedEmbedder, MemoryComponent]:
    """The API and the memory part, started, with a model that blocks until its gate is set."""
    api = await ApiHarness(tmp_path).start()
    model = GatedEmbedder()
    memory = MemoryComponent(embedder=model)
    assert api.ctx is not None
    await memory.start(api.ctx)
    return api, model, memory


async def test_turn_returns_before_embedding_and_health_reports_pending_then_zero(tmp_path: Path) -> None:
    api, model, memory = await gated_memory(tmp_path)
    assert api.ctx is not None
    try:
        status, body = await api.call("POST", "/v1/turns", turn("t1", "我的猫芝麻今天去打疫苗了", "芝麻好勇敢"))
        assert status == 200 and len(body["memory_ids"]) == 2  # answered while the model is still blocked
        assert await health_pending(api) == 2
        status, ctx_body = await api.call("POST", "/v1/context", {"turn_id": "t2", "query": "芝麻 疫苗"})
        assert status == 200 and "芝麻" in json.dumps(ctx_body, ensure_ascii=False)  # keyword lane, no vectors yet
        model.gate.set()
        await wait_for_no_pending(api)
        indexed = api.log.named("memory.indexed")
        assert sum(event["count"] for event in indexed) == 2
        assert "芝麻" not in api.log.text()
    finally:
        model.gate.set()
        await memory.stop(api.ctx)
        await api.stop()


async def test_stop_during_a_batch_writes_nothing_and_the_next_start_indexes_it(tmp_path: Path) -> None:
    api, model, memory = await gated_memory(tmp_path)
    assert api.ctx is not None
    status, _ = await api.call("POST", "/v1/turns", turn("t1", "下周去上海面试", "我陪你准备"))
    assert status == 200
    while model.calls == 0:  # the indexer has taken the batch and is embedding it
        await asyncio.sleep(0.01)
    stopping = asyncio.create_task(memory.stop(api.ctx))
    await asyncio.sleep(0)
    model.gate.set()
    await stopping
    assert await api.db(count_pending) == 2  # the stopped batch was not written, not half written

    restarted = MemoryComponent(embedder=HashEmbedder())
    await restarted.start(api.ctx)
    try:
        await wait_for_no_pending(api)
        assert await api.db(lambda c: count(c, "mem_embedding")) == 2
    finally:
        await restarted.stop(api.ctx)
        await api.stop()


def test_cli_ingest_defer_embedding_then_reembed_pending(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "anima.db"
    # seed-probe is dated up to January 2027 and ingest refuses a ts more than a day ahead of its clock:
    # the CLI runs at the probe's fixed now.
    clock = tmp_path / "clock"
    clock.write_text(str(NOW - time.time()))
    monkeypatch.setenv("ANIMA_TEST_CLOCK_FILE", str(clock))
    assert cli_main(["--db", str(db), "ingest", str(SEED), "--defer-embedding", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["vectors_pending"] == summary["new_memories"] > 0
    assert cli_main(["--db", str(db), "reembed", "--pending"]) == 0
    assert f"embedded {summary['new_memories']} pending memories" in capsys.readouterr().out
    conn = connect(db)
    assert count_pending(conn) == 0 and count(conn, "mem_embedding") == summary["new_memories"]


async def test_a_stop_does_not_wait_for_a_batch_that_cannot_get_the_cpu(tmp_path: Path) -> None:
    """The indexer embeds at idle priority: on a busy machine its batch may not run for as long as the load
    lasts (a `.stop` once waited 20 s and more for it). The gate stands for that CPU: closed until after the stop."""
    api, model, memory = await gated_memory(tmp_path)
    assert api.ctx is not None
    try:
        status, _ = await api.call("POST", "/v1/turns", turn("t1", "下周去上海面试", "我陪你准备"))
        assert status == 200
        while model.calls == 0:  # the indexer has taken the batch and is embedding it
            await asyncio.sleep(0.01)
        await asyncio.wait_for(memory.stop(api.ctx), 20)  # returns with the model still blocked
        assert not model.gate.is_set()
    finally:
        model.gate.set()
    await asyncio.sleep(0.2)  # the left-behind batch finishes its embedding now ...
    assert await api.db(count_pending) == 2  # ... and writes nothing: her rows wait for the next start
    await api.stop()
