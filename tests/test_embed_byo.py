"""Bring your own embedder: [memory] provider "openai" end to end, against a loopback /v1/embeddings server.

The server is a real aiohttp server on 127.0.0.1 speaking the OpenAI embeddings protocol (what
llama.cpp's server, Ollama, text-embeddings-inference and hosted APIs answer); its "model" is a
bag of characters, so the test knows which turn is nearest. It checks what README's "Bring your own
embedder" promises: the prefixes and the batch size from config reach the wire, a database made with
the bundled model is refused until `anima reembed`, and after the reembed recall runs on the new vectors.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from engine.errors import StoreError
from engine.memory.embed import make_embedder
from engine.memory.ingest import TurnInput, record_turns_bulk
from engine.memory.recall import recall
from engine.memory.reembed import reembed
from engine.settings import MemorySettings
from tests.memory_helpers import ON, embedder, fresh_db

DIM = 64
NOW = 1_790_000_000.0


def bag_of_characters(text: str) -> list[float]:
    """The fake model: each character counts in one of DIM buckets (stable across processes)."""
    vec = [0.0] * DIM
    for ch in text:
        vec[int(hashlib.md5(ch.encode()).hexdigest(), 16) % DIM] += 1.0
    return vec


@dataclass
class FakeEndpoint:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeEndpoint]:
    state = FakeEndpoint()

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        state.requests.append({"auth": request.headers.get("Authorization"), "body": body})
        if not isinstance(body.get("input"), list) or not body.get("model"):
            return web.json_response({"error": {"message": "input must be a list"}}, status=400)
        data = [{"object": "embedding", "index": i, "embedding": bag_of_characters(t)}
                for i, t in enumerate(body["input"])]
        return web.json_response({"object": "list", "model": body["model"], "data": data[::-1],
                                  "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{port}/v1"
    yield state
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)
    loop.close()


def byo_settings(url: str) -> MemorySettings:
    return MemorySettings(embedding_provider="openai", embedding_url=url, embedding_model="bag-of-chars",
                          embedding_dim=DIM, embedding_api_key_env="ANIMA_TEST_BYO_KEY",
                          embedding_query_prefix="query: ", embedding_passage_prefix="passage: ", embedding_batch=2)


def test_config_prefixes_batch_and_key_reach_the_wire(endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANIMA_TEST_BYO_KEY", "k-123")
    byo = make_embedder(byo_settings(endpoint.url))
    endpoint.requests.clear()
    rows = byo.embed_passages(["一", "二", "三", "四", "五"])
    assert rows.shape == (5, DIM) and np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert [r["body"]["input"] for r in endpoint.requests] == [
        ["passage: 一", "passage: 二"], ["passage: 三", "passage: 四"], ["passage: 五"]]  # batch 2, in order
    assert {r["auth"] for r in endpoint.requests} == {"Bearer k-123"}
    expected = np.array(bag_of_characters("passage: 三"), dtype=np.float32)
    assert np.allclose(rows[2], expected / np.linalg.norm(expected))  # rows come back in input order
    byo.embed_queries(["我"])
    assert endpoint.requests[-1]["body"] == {"model": "bag-of-chars", "input": ["query: 我"]}


def test_switching_models_needs_reembed_and_recall_then_runs_on_the_new_vectors(endpoint: FakeEndpoint,
                                                                               tmp_path: Any) -> None:
    conn = fresh_db(tmp_path / "anima.db")
    turns = [TurnInput(turn_id="t1", user="我家的猫叫芝麻，三岁了", companion=None, ts_iso="2026-06-01T20:00:00+08:00"),
             TurnInput(turn_id="t2", user="今天加班到十点，地铁都快停了", companion=None, ts_iso="2026-06-02T22:00:00+08:00"),
             TurnInput(turn_id="t3", user="周末去爬了紫金山，风好大", companion=None, ts_iso="2026-06-03T18:00:00+08:00")]
    record_turns_bulk(conn, embedder(), turns, now=NOW)  # made with the bundled model
    settings = byo_settings(endpoint.url)
    byo = make_embedder(settings)
    with pytest.raises(StoreError, match="anima reembed"):
        recall(conn, byo, "我家猫叫什么", settings=settings, switches=ON, now=NOW)
    assert reembed(conn, byo, NOW).memories == 3
    endpoint.requests.clear()
    result = recall(conn, byo, "我家的猫叫什么名字", settings=settings, switches=ON, now=NOW)
    assert result.hits and result.hits[0].turn_id == "t1"
    assert any(r["body"]["input"] == ["query: 我家的猫叫什么名字"] for r in endpoint.requests)
    stored = conn.execute("SELECT name, dim FROM embedding_model").fetchone()
    assert tuple(stored) == ("bag-of-chars", DIM)
