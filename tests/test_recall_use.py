"""Using a memory counts, reading does not: a context block strengthens its memories only when the reply's turn confirms it, once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.api_support import ApiHarness, turn
from tests.memory_helpers import embedder

CAT = ("t-cat", "我的猫芝麻今天去打疫苗了", "芝麻好勇敢")
JOB = ("t-job", "下周我要去上海面试", "加油！")


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiHarness]:
    harness = await ApiHarness(tmp_path, embedder=embedder()).start()
    for turn_id, user, companion in (CAT, JOB):
        status, _ = await harness.call("POST", "/v1/turns", turn(turn_id, user, companion, ts="2026-05-20T20:00:00+08:00"))
        assert status == 200
    yield harness
    await harness.stop()


async def strengths(api: ApiHarness) -> dict[int, tuple[int, float]]:
    """memory id -> (recall_count, accessibility) of every memory."""
    rows = await api.db(lambda c: c.execute("SELECT id, recall_count, accessibility FROM mem_episodic").fetchall())
    return {int(r[0]): (int(r[1]), float(r[2])) for r in rows}


async def shown_ids(api: ApiHarness, injection_id: str) -> list[int]:
    import json

    row = await api.db(lambda c: c.execute("SELECT memory_ids_json FROM context_injection WHERE id = ?",
                                           (injection_id,)).fetchone())
    return [int(i) for i in json.loads(row[0])]


async def ask(api: ApiHarness, turn_id: str, query: str = "芝麻打疫苗怎么样") -> dict[str, Any]:
    status, ctx = await api.call("POST", "/v1/context", {"query": query, "turn_id": turn_id})
    assert status == 200 and ctx["injection_id"], ctx
    return ctx


def changed(before: dict[int, tuple[int, float]], after: dict[int, tuple[int, float]]) -> set[int]:
    """Memories that existed before and whose strength moved (the turn's own new memories are not counted)."""
    return {i for i in before if after[i] != before[i]}


async def test_context_alone_strengthens_nothing(api: ApiHarness) -> None:
    before = await strengths(api)
    for _ in range(3):
        await ask(api, "t-next")
    assert await strengths(api) == before  # handed out, never confirmed: nothing used


async def test_context_then_its_turn_strengthens_the_shown_memories_once(api: ApiHarness) -> None:
    before = await strengths(api)
    ctx = await ask(api, "t-next")
    shown = await shown_ids(api, ctx["injection_id"])
    assert shown
    api.clock.advance(60)
    status, out = await api.call("POST", "/v1/turns", turn("t-next", "芝麻打疫苗怎么样", "它很乖，一点都没哭"))
    assert status == 200
    assert out["used_injection_id"] == ctx["injection_id"] and out["strengthened"] == len(shown)
    after = await strengths(api)
    assert changed(before, after) == set(shown)
    for memory_id in shown:
        assert after[memory_id][0] == before[memory_id][0] + 1 and after[memory_id][1] > before[memory_id][1]

    # The front end retries the same turn: recorded once, strengthened once.
    api.clock.advance(60)
    status, replay = await api.call("POST", "/v1/turns", turn("t-next", "芝麻打疫苗怎么样", "它很乖，一点都没哭"))
    assert status == 200 and replay["created"] is False
    assert replay["used_injection_id"] == ctx["injection_id"] and replay["strengthened"] == 0
    assert await strengths(api) == after


async def test_the_newest_block_of_a_turn_is_the_used_one(api: ApiHarness) -> None:
    first = await ask(api, "t-next", "芝麻打疫苗怎么样")
    second = await ask(api, "t-next", "下周去哪面试")
    _, out = await api.call("POST", "/v1/turns", turn("t-next", "下周去哪面试", "上海，加油"))
    assert out["used_injection_id"] == second["injection_id"] != first["injection_id"]
    used = await api.db(lambda c: c.execute("SELECT id, used_turn_id FROM context_injection WHERE used_at IS NOT NULL")
                        .fetchall())
    assert [tuple(r) for r in used] == [(second["injection_id"], "t-next")]


async def test_a_turn_naming_its_injection_confirms_that_block(api: ApiHarness) -> None:
    ctx = await ask(api, "asked-under-another-id")
    shown = await shown_ids(api, ctx["injection_id"])
    before = await strengths(api)
    _, out = await api.call("POST", "/v1/turns", turn("t-reply", "芝麻打疫苗怎么样", "很乖", injection_id=ctx["injection_id"]))
    assert out["used_injection_id"] == ctx["injection_id"] and out["strengthened"] == len(shown)
    assert changed(before, await strengths(api)) == set(shown)


async def test_an_unknown_injection_is_a_400_and_records_nothing(api: ApiHarness) -> None:
    before = await strengths(api)
    status, body = await api.call("POST", "/v1/turns", turn("t-x", "你好", "你好呀", injection_id="inj_" + "0" * 20))
    assert status == 400 and "injection_id" in body["error"]["message"]
    messages = await api.db(lambda c: c.execute("SELECT count(*) FROM chat_message WHERE turn_id = 't-x'").fetchone()[0])
    assert messages == 0 and await strengths(api) == before


async def test_a_block_used_by_one_turn_cannot_be_claimed_by_another(api: ApiHarness) -> None:
    ctx = await ask(api, "t-a")
    _, first = await api.call("POST", "/v1/turns", turn("t-a", "芝麻打疫苗怎么样", "很乖"))
    assert first["strengthened"] > 0
    after = await strengths(api)
    status, body = await api.call("POST", "/v1/turns", turn("t-b", "还有呢", "没了", injection_id=ctx["injection_id"]))
    assert status == 409 and body["error"]["code"] == "conflict"
    assert await strengths(api) == after
    count = await api.db(lambda c: c.execute("SELECT count(*) FROM chat_message WHERE turn_id = 't-b'").fetchone()[0])
    assert count == 0


async def test_small_talk_with_nothing_related_gives_an_empty_context_and_no_injection(api: ApiHarness) -> None:
    await api.call("PUT", "/v1/control/memory_search", {"value": False})  # recall finds nothing at all
    status, ctx = await api.call("POST", "/v1/context", {"query": "今天天气不错", "turn_id": "t-w"})
    assert status == 200 and ctx["context"] == "" and ctx["injection_id"] is None and ctx["hits"] == []
    count = await api.db(lambda c: c.execute("SELECT count(*) FROM context_injection").fetchone()[0])
    assert count == 0
    _, out = await api.call("POST", "/v1/turns", turn("t-w", "今天天气不错", "是呀"))
    assert out["used_injection_id"] is None and out["strengthened"] == 0
