"""The API's endpoints in-process (real component on a Unix socket, FakeClock): what a front end gets for each call."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from daemon.api import validation
from engine.consolidate.run import consolidate_once
from engine.store.core import read_switches
from engine.store.life import add_life_event
from tests.api_support import ApiHarness, turn
from tests.memory_helpers import embedder

EVENT = "下午一个人去湖边散步，看见一只白鹭在石头上站了很久"


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiHarness]:
    harness = await ApiHarness(tmp_path, embedder=embedder()).start()
    yield harness
    await harness.stop()


async def untold(api: ApiHarness, text: str = EVENT, ago_s: float = 600) -> int:
    def add(conn: Any) -> int:
        return add_life_event(conn, text, api.clock.now() - ago_s, told=False, origin="life", kind="completed")

    return int(await api.db(add))


async def rows(api: ApiHarness, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await api.db(lambda c: c.execute(sql, args).fetchall())]


async def test_turn_is_recorded_once_and_returns_memory_ids_and_mood(api: ApiHarness) -> None:
    status, first = await api.call("POST", "/v1/turns", turn("t1", "我的猫芝麻生病了，好难过", "别担心，芝麻会好起来的"))
    assert status == 200 and first["created"] is True
    assert len(first["memory_ids"]) == 2 and len(first["message_ids"]) == 2
    assert set(first["mood"]) == {"v", "a", "d", "e", "label", "words_zh", "feelings"}
    status, again = await api.call("POST", "/v1/turns", turn("t1", "我的猫芝麻生病了，好难过", "别担心，芝麻会好起来的"))
    assert status == 200 and again["created"] is False and again["memory_ids"] == []
    assert again["message_ids"] == first["message_ids"]
    assert await rows(api, "SELECT count(*) FROM chat_message") == [(2,)]


async def test_replayed_turn_does_not_push_her_mood_twice(api: ApiHarness) -> None:
    body = turn("t1", "我失业了，真的很绝望，什么都做不好", "我在，慢慢说")
    _, first = await api.call("POST", "/v1/turns", body)
    _, again = await api.call("POST", "/v1/turns", body)
    assert again["mood"]["v"] == pytest.approx(first["mood"]["v"], abs=1e-3)


async def test_sad_turn_lowers_her_valence(api: ApiHarness) -> None:
    _, before = await api.call("GET", "/v1/state")
    _, after = await api.call("POST", "/v1/turns", turn("t1", "我外婆今天去世了，我一直在哭，心里好痛", "我很难过，抱抱你"))
    assert after["mood"]["v"] < before["mood"]["v"]


async def test_turn_with_different_text_for_same_id_is_409_and_changes_nothing(api: ApiHarness) -> None:
    await api.call("POST", "/v1/turns", turn("t1", "你好", "嗨"))
    status, body = await api.call("POST", "/v1/turns", turn("t1", "另一句话", "嗨"))
    assert status == 409 and body["error"]["code"] == "conflict"
    assert await rows(api, "SELECT text FROM chat_message WHERE role = 'user'") == [("你好",)]


async def test_appraisal_off_leaves_mood_and_life_off_leaves_activity(api: ApiHarness) -> None:
    _, before = await api.call("GET", "/v1/state")
    assert (await api.call("PUT", "/v1/control/appraisal", {"value": False}))[0] == 200
    assert (await api.call("PUT", "/v1/control/life", {"value": False}))[0] == 200
    _, out = await api.call("POST", "/v1/turns", turn("t1", "气死我了！！太过分了！", "怎么了？"))
    assert out["interrupted"] is False
    assert out["mood"]["v"] == pytest.approx(before["mood"]["v"], abs=1e-3)


async def test_context_cites_the_turn_and_records_the_injection(api: ApiHarness) -> None:
    await api.call("POST", "/v1/turns", turn("t-cat", "我的猫芝麻今天去打疫苗了", "芝麻乖不乖？"))
    await api.call("POST", "/v1/turns", turn("t-job", "下周我要去上海面试", "加油！"))
    status, ctx = await api.call("POST", "/v1/context", {"query": "芝麻打疫苗怎么样", "turn_id": "t-next"})
    assert status == 200
    assert "t-cat" in ctx["context"] and "芝麻" in ctx["context"]
    assert ctx["hits"][0]["turn_id"] == "t-cat"
    assert ctx["injection_id"]
    stored = await rows(api, "SELECT turn_id, block_text FROM context_injection WHERE id = ?", ctx["injection_id"])
    assert stored == [("t-next", ctx["context"])]
    assert set(ctx["mood"]) == {"v", "a", "d", "e", "label", "words_zh", "feelings"} and 0 <= ctx["energy"] <= 1


async def test_context_carries_the_relationship_whatever_the_query(api: ApiHarness) -> None:
    """Nicknames, rituals and taboos learnt by consolidation reach every reply, taboos first; the switches hide them."""
    await api.call("POST", "/v1/turns", turn("t-name", "以后你就叫我小林吧", "好的，小林", ts="2026-05-20T21:00:00+08:00"))
    await api.call("POST", "/v1/turns", turn("t-ritual", "我们每天晚上都说晚安吧", "好呀", ts="2026-05-21T22:00:00+08:00"))
    await api.call("POST", "/v1/turns", turn("t-taboo", "不要叫我宝宝", "好，记住了", ts="2026-05-22T20:00:00+08:00"))
    _, before = await api.call("POST", "/v1/context", {"query": "今天天气怎么样"})
    assert before["relationship"] == []
    await api.db(lambda c: consolidate_once(c, embedder(), api.settings, read_switches(c), api.clock.now()))

    _, ctx = await api.call("POST", "/v1/context", {"query": "今天天气怎么样"})
    kinds = [(r["kind"], r["statement"].partition("用户说：")[2]) for r in ctx["relationship"]]
    assert kinds[0] == ("taboo", "不要叫我宝宝")
    assert set(kinds) == {("taboo", "不要叫我宝宝"), ("nickname", "以后你就叫我小林吧"), ("ritual", "我们每天晚上都说晚安吧")}
    for switch in ("memory_facts", "memory_search"):
        await api.call("PUT", f"/v1/control/{switch}", {"value": False})
        _, off = await api.call("POST", "/v1/context", {"query": "今天天气怎么样"})
        assert off["relationship"] == []
        await api.call("PUT", f"/v1/control/{switch}", {"value": True})


class CountingEmbedder:
    """The real model, counting the calls that embed queries (to see where the work happens)."""

    def __init__(self, base: Any):
        self.base, self.name, self.dim = base, base.name, base.dim
        self.query_calls: list[list[str]] = []

    def embed_queries(self, texts: Any) -> Any:
        self.query_calls.append(list(texts))
        return self.base.embed_queries(texts)

    def embed_passages(self, texts: Any) -> Any:
        return self.base.embed_passages(texts)


async def test_a_multi_line_query_is_embedded_in_one_call_before_the_db_work(tmp_path: Path) -> None:
    counting = CountingEmbedder(embedder())
    harness = await ApiHarness(tmp_path, embedder=counting).start()
    try:
        await harness.call("POST", "/v1/turns", turn("t-cat", "我的猫芝麻今天去打疫苗了", "芝麻乖不乖？"))
        counting.query_calls.clear()
        query = "你好呀\n芝麻打完疫苗还好吗\n它最近胃口怎么样"
        status, ctx = await harness.call("POST", "/v1/context", {"query": query})
        assert status == 200 and ctx["hits"][0]["turn_id"] == "t-cat"
        # The whole query and each line, in one call from the API's pool; recall on the DB thread reuses them.
        assert counting.query_calls == [[query, "你好呀", "芝麻打完疫苗还好吗", "它最近胃口怎么样"]]
    finally:
        await harness.stop()


async def test_context_respects_the_budget(api: ApiHarness) -> None:
    for i in range(6):
        await api.call("POST", "/v1/turns", turn(f"t{i}", f"我今天去了第{i}家咖啡店，拿铁很好喝，店里放着爵士乐", "听起来很惬意"))
    _, ctx = await api.call("POST", "/v1/context", {"query": "咖啡店", "budget": 120})
    from engine.memory.tokens import text_cost  # the budget is CJK-aware: ASCII costs half

    assert 0 < text_cost(ctx["context"]) <= 120


async def test_memory_search_off_gives_no_memory_block(api: ApiHarness) -> None:
    await api.call("POST", "/v1/turns", turn("t1", "我的猫芝麻今天去打疫苗了", "芝麻乖不乖？"))
    await api.call("PUT", "/v1/control/memory_search", {"value": False})
    _, ctx = await api.call("POST", "/v1/context", {"query": "芝麻"})
    assert ctx["context"] == "" and ctx["hits"] == [] and ctx["injection_id"] is None and ctx["mode"] == "off"


async def test_share_offers_one_untold_event_and_the_same_one_again_for_the_same_turn(api: ApiHarness) -> None:
    await untold(api)
    status, first = await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "你下午去散步了吗，湖边有什么"})
    assert status == 200 and first["reason"] == "offered"
    assert first["offer"]["text"] == EVENT
    _, again = await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "你下午去散步了吗"})
    assert again["reason"] == "already_offered" and again["offer"]["share_id"] == first["offer"]["share_id"]
    _, other = await api.call("POST", "/v1/share", {"turn_id": "t2", "query": "湖边散步"})
    assert other == {"offer": None, "reason": "cooldown"}
    assert await rows(api, "SELECT count(*) FROM share_offer") == [(1,)]


async def test_untold_event_stays_out_of_context_and_life_until_receipted(api: ApiHarness) -> None:
    event_id = await untold(api)
    await api.call("POST", "/v1/turns", turn("t0", "你今天下午干嘛了？", "嗯……"))
    _, offer = await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "湖边散步 白鹭"})
    _, ctx = await api.call("POST", "/v1/context", {"query": "湖边散步 白鹭"})
    _, life = await api.call("GET", "/v1/life")
    assert EVENT not in json.dumps(ctx, ensure_ascii=False) and "白鹭" not in ctx["context"]
    assert all("白鹭" not in h["text"] for h in ctx["hits"]) and life["events"] == []
    share_id = offer["offer"]["share_id"]
    await api.call("POST", "/v1/turns", turn("t1", "说说看", "好呀"))  # the turn that told it, recorded first
    status, receipt = await api.call("POST", f"/v1/share/{share_id}/receipt", {"turn_id": "t1"})
    assert status == 200 and receipt["told"] is True and receipt["memory_id"]
    assert await rows(api, "SELECT told, told_turn_id FROM life_event WHERE id = ?", event_id) == [(1, "t1")]
    _, life = await api.call("GET", "/v1/life")
    assert [e["text"] for e in life["events"]] == [EVENT]
    _, ctx = await api.call("POST", "/v1/context", {"query": "湖边散步看见白鹭"})
    assert any(h["source"] == "self_life" for h in ctx["hits"]) and "白鹭" in ctx["context"]


async def test_receipt_is_idempotent_for_its_turn_and_409_for_another(api: ApiHarness) -> None:
    await untold(api)
    _, offer = await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "湖边散步"})
    path = f"/v1/share/{offer['offer']['share_id']}/receipt"
    await api.call("POST", "/v1/turns", turn("t1", "说说看", "好呀"))
    await api.call("POST", "/v1/turns", turn("t9", "还有呢", "没啦"))
    first = await api.call("POST", path, {"turn_id": "t1"})
    again = await api.call("POST", path, {"turn_id": "t1"})
    assert first[0] == again[0] == 200 and again[1]["memory_id"] == first[1]["memory_id"]
    status, body = await api.call("POST", path, {"turn_id": "t9"})
    assert status == 409 and body["error"]["code"] == "conflict"


async def test_offer_without_receipt_expires_and_stays_untold(api: ApiHarness) -> None:
    event_id = await untold(api)
    _, offer = await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "湖边散步"})
    await api.beat(api.settings.api.share_offer_ttl_s + 1)
    assert await rows(api, "SELECT status FROM share_offer") == [("expired",)]
    status, body = await api.call("POST", f"/v1/share/{offer['offer']['share_id']}/receipt", {"turn_id": "t1"})
    assert status == 409 and "expired" in body["error"]["message"]
    assert await rows(api, "SELECT told FROM life_event WHERE id = ?", event_id) == [(0,)]
    assert await rows(api, "SELECT count(*) FROM mem_episodic WHERE life_event_id = ?", event_id) == [(0,)]


async def test_receipt_for_unknown_offer_is_404(api: ApiHarness) -> None:
    status, body = await api.call("POST", "/v1/share/sh_nope/receipt", {"turn_id": "t1"})
    assert status == 404 and body["error"]["code"] == "not_found"


async def test_sharing_off_offers_nothing(api: ApiHarness) -> None:
    await untold(api)
    await api.call("PUT", "/v1/control/sharing", {"value": False})
    assert await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "湖边散步"}) == (
        200, {"offer": None, "reason": "sharing_off"})


async def test_life_lists_told_events_since(api: ApiHarness) -> None:
    def seed(conn: Any) -> None:
        add_life_event(conn, "早上给阳台的薄荷浇了水", api.clock.now() - 7200, told=True)
        add_life_event(conn, "中午煮了一碗番茄面", api.clock.now() - 3600, told=True)
        add_life_event(conn, "这件事她还没说过", api.clock.now() - 1800, told=False)

    await api.db(seed)
    _, everything = await api.call("GET", "/v1/life")
    assert [e["text"] for e in everything["events"]] == ["早上给阳台的薄荷浇了水", "中午煮了一碗番茄面"]
    _, recent = await api.call("GET", f"/v1/life?since={api.clock.now() - 4000}")
    assert [e["text"] for e in recent["events"]] == ["中午煮了一碗番茄面"]
    _, limited = await api.call("GET", "/v1/life?limit=1")
    assert len(limited["events"]) == 1
    status, body = await api.call("GET", "/v1/life?since=yesterday")
    assert status == 400 and body["error"]["code"] == "bad_request"


async def test_control_get_put_and_refusals_write_nothing(api: ApiHarness) -> None:
    status, listed = await api.call("GET", "/v1/control")
    assert status == 200 and {c["key"] for c in listed["controls"]} >= {"sharing", "appraisal", "life"}
    assert (await api.call("PUT", "/v1/control/sharing", {"value": False})) == (
        200, {"key": "sharing", "old": True, "value": False})
    assert (await api.call("GET", "/v1/control/sharing"))[1]["value"] is False
    before = await rows(api, "SELECT key, value_json FROM life_control ORDER BY key")
    events = await rows(api, "SELECT count(*) FROM event_log")
    assert (await api.call("PUT", "/v1/control/sharing", {"value": "maybe"}))[0] == 400
    assert (await api.call("PUT", "/v1/control/nonsense", {"value": True}))[0] == 404
    assert (await api.call("GET", "/v1/control/nonsense"))[0] == 404
    assert (await api.call("PUT", "/v1/control/sharing", {"value": True, "extra": 1}))[0] == 400
    assert await rows(api, "SELECT key, value_json FROM life_control ORDER BY key") == before
    assert await rows(api, "SELECT count(*) FROM event_log") == events
    # Issue 25: "off"/"on", as the CLI takes them, are the same values.
    assert (await api.call("PUT", "/v1/control/sharing", {"value": "on"})) == (
        200, {"key": "sharing", "old": False, "value": True})
    assert (await api.call("PUT", "/v1/control/sharing", {"value": "off"})) == (
        200, {"key": "sharing", "old": True, "value": False})


async def test_persona_gives_name_birth_and_chart_in_chinese(api: ApiHarness) -> None:
    status, persona = await api.call("GET", "/v1/persona")
    assert status == 200 and persona["name"] == "小安"
    assert persona["birth"]["local"] == "1998-04-12 09:30" and persona["birth"]["tz"] == "Asia/Shanghai"
    assert "日主" in persona["chart"] and "四柱" in persona["chart"]
    assert "sociability" in persona["persona"]


async def test_health_and_state(api: ApiHarness) -> None:
    status, health = await api.call("GET", "/v1/health")
    assert status == 200 and health["alive"] is True and health["db_ok"] is True
    status, state = await api.call("GET", "/v1/state")
    assert status == 200 and state["name"] == "小安" and state["counts"]["chat_messages"] == 0
    assert state["controls"]["sharing"] is True


async def test_openapi_is_served_as_kept_in_the_repo(api: ApiHarness) -> None:
    status, doc = await api.call("GET", "/v1/openapi.json")
    assert status == 200 and doc == validation.document() and doc["openapi"].startswith("3.1")


@pytest.mark.parametrize(
    ("method", "path", "raw", "status", "code"),
    [
        ("POST", "/v1/turns", b"{not json", 400, "bad_request"),
        ("POST", "/v1/turns", b'{"turn_id": "t", "ts": NaN}', 400, "bad_request"),
        ("POST", "/v1/context", b"[" * 5000 + b"]" * 5000, 400, "bad_request"),
        ("POST", "/v1/context", b"\xff\xfe", 400, "bad_request"),
        ("POST", "/v1/context", b'{"query": ""}', 400, "bad_request"),
        ("GET", "/v1/nothing", None, 404, "not_found"),
        ("DELETE", "/v1/state", None, 405, "method_not_allowed"),
    ],
)
async def test_bad_requests_get_the_error_shape(api: ApiHarness, method: str, path: str, raw: bytes | None,
                                                status: int, code: str) -> None:
    got, body = await api.call(method, path, raw=raw)
    assert got == status and body["error"]["code"] == code and body["error"]["message"]
