"""Read-your-writes, the parts: which pending rows a context request embeds, once per row, within its bound."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from daemon.memory_component import FreshEmbeddings, MemoryComponent
from engine.memory.indexer import FRESH_WINDOW_S, fresh_pending_rows
from engine.memory.ingest import TurnInput, record_turn
from tests.api_support import ApiHarness, HashEmbedder, turn
from tests.memory_helpers import fresh_db

NOW = 1_780_000_000.0


def test_fresh_rows_are_the_newest_pending_user_side_first_within_the_window(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "anima.db")
    model = HashEmbedder()
    record_turn(conn, model, TurnInput("old", "很久以前说的话", "嗯", "2026-05-01T10:00:00+08:00"),
                NOW - FRESH_WINDOW_S - 1, embed=False)
    record_turn(conn, model, TurnInput("done", "已经有向量的话", "嗯嗯", "2026-05-01T11:00:00+08:00"), NOW - 5)
    record_turn(conn, model, TurnInput("t1", "第一句", "回一", "2026-05-01T12:00:00+08:00"), NOW - 2, embed=False)
    record_turn(conn, model, TurnInput("t2", "第二句", "回二", "2026-05-01T12:01:00+08:00"), NOW - 1, embed=False)
    texts = [row["raw"] for row in fresh_pending_rows(conn, 10, NOW)]
    assert texts == ["第二句", "第一句", "回二", "回一"]  # never the indexed turn, never the one past the window
    assert [row["raw"] for row in fresh_pending_rows(conn, 2, NOW)] == ["第二句", "第一句"]
    assert fresh_pending_rows(conn, 0, NOW) == []


async def test_concurrent_requests_embed_each_row_once_and_one_call_at_a_time() -> None:
    fresh = FreshEmbeddings()
    calls: list[list[str]] = []
    release = asyncio.Event()

    async def embed(texts: list[str]) -> Any:
        calls.append(texts)
        await release.wait()
        return np.ones((len(texts), 3), dtype=np.float32) * len(calls)

    rows = [{"id": 7, "raw": "a"}, {"id": 8, "raw": "b"}]
    first = asyncio.create_task(fresh.vectors_for(rows, embed, 5.0))
    await asyncio.sleep(0)
    second = asyncio.create_task(fresh.vectors_for(rows + [{"id": 9, "raw": "c"}], embed, 5.0))
    await asyncio.sleep(0)
    release.set()
    got_first, got_second = await asyncio.gather(first, second)
    # 7 and 8 embedded by the first request only; the second waits for them and starts no call of its own
    assert calls == [["a", "b"]]
    assert sorted(got_first) == [7, 8] and sorted(got_second) == [7, 8]
    assert fresh.inflight == {} and not fresh.embedding
    third = await fresh.vectors_for([{"id": 9, "raw": "c"}], embed, 5.0)  # nothing running: it embeds
    assert calls == [["a", "b"], ["c"]] and sorted(third) == [9]


async def test_a_stuck_embedding_gives_up_within_the_bound() -> None:
    fresh = FreshEmbeddings()

    async def never(texts: list[str]) -> Any:
        await asyncio.Event().wait()

    with pytest.raises(TimeoutError):
        await fresh.vectors_for([{"id": 1, "raw": "a"}], never, 0.05)
    assert fresh.inflight == {}


class GatedEmbedder(HashEmbedder):
    """Passage embedding waits for the test to open the gate: the indexer cannot finish a batch before it does."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        assert self.gate.wait(timeout=30), "gate never opened"
        return super().embed_passages(texts)


async def until(predicate: Any, timeout_s: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_the_indexer_says_when_nothing_can_be_pending(tmp_path: Path) -> None:
    api = await ApiHarness(tmp_path).start()
    model = GatedEmbedder()
    memory = MemoryComponent(embedder=model)
    assert api.ctx is not None
    await memory.start(api.ctx)
    indexer = memory.indexer
    assert indexer is not None
    try:
        await until(lambda: not indexer.may_have_pending())  # the start-up drain found nothing
        status, _ = await api.call("POST", "/v1/turns", turn("t1", "我的猫芝麻今天去打疫苗了", "芝麻好勇敢"))
        assert status == 200 and indexer.may_have_pending()  # woken by the turn; its batch cannot finish yet
        model.gate.set()
        await until(lambda: not indexer.may_have_pending())
        pending = await api.db(lambda c: c.execute("SELECT count(*) FROM mem_episodic e WHERE NOT EXISTS "
                                                   "(SELECT 1 FROM mem_embedding v WHERE v.id = e.id)").fetchone()[0])
        assert pending == 0  # "nothing pending" is only said when it is true
    finally:
        model.gate.set()
        await memory.stop(api.ctx)
        await api.stop()


def test_a_keyword_match_waiting_for_its_vector_is_not_hidden_by_vectored_hits(tmp_path: Path) -> None:
    """Whatever the indexer has not reached yet is still found by the user's own words."""
    from engine.memory.recall import recall
    from tests.memory_helpers import ON, SETTINGS

    conn = fresh_db(tmp_path / "anima.db")
    model = HashEmbedder()
    for i, text in enumerate(["今天吃了牛肉面", "晚上看了一部老电影", "周末想去湖边骑车", "最近在学做蛋糕",
                              "下班路上下起了大雨", "报名了游泳课", "养的多肉开花了", "感冒了嗓子疼"]):
        record_turn(conn, model, TurnInput(f"other{i}", text, "嗯嗯", f"2026-04-0{i + 1}T10:00:00+08:00"), NOW)
    record_turn(conn, model, TurnInput("indexed", "上海面试", "加油", "2026-05-01T10:00:00+08:00"), NOW)
    record_turn(conn, model, TurnInput("waiting", "下周还要去上海面试，有点怕", "别怕", "2026-05-02T10:00:00+08:00"),
                NOW, embed=False)
    result = recall(conn, model, "上海面试", settings=SETTINGS, switches=ON, now=NOW)
    turns = [h.turn_id for h in result.hits]
    assert turns[0] == "indexed" and result.mode == "hybrid"  # a vectored hit passed the floor on its own
    assert "waiting" in turns and "waiting" in result.context  # ... and the unembedded turn is still there


async def test_a_context_embeds_fresh_rows_only_while_it_is_the_one_reply_being_prepared(tmp_path: Path) -> None:
    from daemon.priority import gate_of

    api = await ApiHarness(tmp_path).start()
    model = GatedEmbedder()  # passages never finish: an attempt shows as a timed-out fresh embedding
    memory = MemoryComponent(embedder=model)
    assert api.ctx is not None
    await memory.start(api.ctx)
    try:
        await api.call("POST", "/v1/turns", turn("t1", "我的猫芝麻今天去打疫苗了", "芝麻好勇敢"))
        async with gate_of(api.ctx).serving():  # another chat's reply is being prepared
            status, _ = await api.call("POST", "/v1/context", {"query": "芝麻怎么样"})
        assert status == 200 and api.log.named("api.context_fresh_timed_out") == []
        assert api.log.named("api.context")[-1]["fresh_embedded"] == 0
        status, _ = await api.call("POST", "/v1/context", {"query": "芝麻怎么样"})  # alone: it tries, within 1 s
        assert status == 200 and len(api.log.named("api.context_fresh_timed_out")) == 1
    finally:
        model.gate.set()
        await memory.stop(api.ctx)
        await api.stop()
