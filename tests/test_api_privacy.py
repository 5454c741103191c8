"""Privacy: her untold life leaves only as the offered `text` of /v1/share — property-tested with canaries.

Canary strings are planted in untold life events and in job scratch; random calls to every
endpoint (turns that talk about the same things, context queries, offers, receipts, life lists,
state, controls, junk bodies) run against the real app; no canary of a still-untold event may
appear in any response outside `offer.text`, no scratch canary anywhere, and no canary in any log
event at all.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.api import privacy
from engine.settings import ApiSettings
from engine.store.life import add_life_event
from tests.api_support import ApiHarness, turn

UNTOLD = [
    ("下午在湖边看白鹭，给它取名叫金丝雀甲一号", "金丝雀甲一号"),
    ("晚上偷偷哭了一会儿，因为想起 CANARY-7f3a9 那封信", "CANARY-7f3a9"),
    ("早上做了一个梦，梦见金丝雀乙二号在屋顶唱歌", "金丝雀乙二号"),
    ("去旧书店买了一本诗集，扉页写着 CANARY-b41e2", "CANARY-b41e2"),
]
SCRATCH_CANARY = "CANARY-scratch-55aa"
TOLD = "上周末去爬了山，山顶的风很大"
VOCAB = ["湖边", "白鹭", "名字", "哭", "信", "梦", "屋顶", "唱歌", "旧书店", "诗集", "扉页", "爬山", "风", "你",
         "今天", "怎么样", "金丝雀", "CANARY", "下午", "晚上", "早上", "猫", "工作"]

words = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6).map("".join)
turn_ids = st.sampled_from(["t1", "t2", "t3", "t4", "t5", "t6"])
junk = st.one_of(st.none(), st.integers(), st.text(max_size=30), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3))

CALLS = st.one_of(
    st.tuples(st.just("turn"), turn_ids, words, words),
    st.tuples(st.just("context"), words, st.one_of(st.none(), st.integers(50, 2000))),
    st.tuples(st.just("share"), turn_ids, st.one_of(st.none(), words)),
    st.tuples(st.just("receipt"), st.integers(0, 5), turn_ids),
    st.tuples(st.just("get"), st.sampled_from(["/v1/life", "/v1/life?since=0", "/v1/state", "/v1/persona",
                                               "/v1/health", "/v1/control", "/v1/control/sharing",
                                               "/v1/openapi.json", "/v1/nothing"])),
    st.tuples(st.just("put"), st.sampled_from(["sharing", "memory_search", "memory_reread", "bogus"]), junk),
    st.tuples(st.just("junk"), st.sampled_from(["/v1/turns", "/v1/context", "/v1/share", "/v1/share/x/receipt"]),
              junk),
    st.tuples(st.just("wait"), st.integers(60, 4000)),
)


async def seed(api: ApiHarness) -> dict[int, str]:
    def write(conn: Any) -> dict[int, str]:
        now = api.clock.now()
        ids = {}
        for i, (text, canary) in enumerate(UNTOLD):
            ids[add_life_event(conn, text, now - 600 * (i + 1), told=False, origin="life", kind="completed")] = canary
        add_life_event(conn, TOLD, now - 86400, told=True)
        conn.execute(
            "INSERT INTO job (kind, payload_json, status, run_after, scratch_json, created_at, updated_at) "
            "VALUES ('consolidate', '{}', 'running', ?, ?, ?, ?)",
            (now, json.dumps({"draft": f"草稿 {SCRATCH_CANARY} 湖边白鹭", "note": UNTOLD[0][0]}), now, now),
        )
        return ids

    return await api.db(write)


async def untold_ids(api: ApiHarness) -> set[int]:
    return {r[0] for r in await api.db(lambda c: c.execute("SELECT id FROM life_event WHERE told = 0").fetchall())}


def outside_offer(path: str, body: Any) -> str:
    if path == "/v1/share" and isinstance(body, dict) and isinstance(body.get("offer"), dict):
        body = {**body, "offer": {**body["offer"], "text": ""}}
    return json.dumps(body, ensure_ascii=False)


async def run_calls(calls: list[tuple[Any, ...]]) -> None:
    generous = ApiSettings(share_min_gap_s=0, share_event_cooldown_s=0, share_threshold=0.0,
                           share_min_willingness=0.0, share_max_offers_per_event=50)
    with tempfile.TemporaryDirectory(prefix="anima-priv-") as root:
        api = await ApiHarness(Path(root), api=generous).start()
        try:
            canaries = await seed(api)
            offered: list[str] = []
            for call in calls:
                kind = call[0]
                if kind == "turn":
                    path, out = "/v1/turns", await api.call("POST", "/v1/turns", turn(call[1], call[2], call[3]))
                elif kind == "context":
                    body = {"query": call[1]} if call[2] is None else {"query": call[1], "budget": call[2]}
                    path, out = "/v1/context", await api.call("POST", "/v1/context", body)
                elif kind == "share":
                    body = {"turn_id": call[1]} if call[2] is None else {"turn_id": call[1], "query": call[2]}
                    path, out = "/v1/share", await api.call("POST", "/v1/share", body)
                    if out[0] == 200 and out[1]["offer"]:
                        offered.append(out[1]["offer"]["share_id"])
                elif kind == "receipt":
                    share_id = offered[call[1] % len(offered)] if offered else "sh_none"
                    path = f"/v1/share/{share_id}/receipt"
                    out = await api.call("POST", path, {"turn_id": call[2]})
                elif kind == "get":
                    path, out = call[1], await api.call("GET", call[1])
                elif kind == "put":
                    path = f"/v1/control/{call[1]}"
                    out = await api.call("PUT", path, {"value": call[2]})
                elif kind == "junk":
                    path, out = call[1], await api.call("POST", call[1], raw=json.dumps(call[2]).encode())
                else:
                    await api.beat(call[1])
                    continue
                assert out[0] < 500, (path, out)
                still_untold = await untold_ids(api)
                text = outside_offer(path, out[1])
                for event_id, canary in canaries.items():
                    if event_id in still_untold:
                        assert canary not in text, (path, canary)
                assert SCRATCH_CANARY not in text
            log_text = api.log.text()
            for canary in [*canaries.values(), SCRATCH_CANARY]:
                assert canary not in log_text
        finally:
            await api.stop()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(CALLS, min_size=4, max_size=30))
def test_no_untold_canary_leaves_outside_the_offer_text(calls: list[tuple[Any, ...]]) -> None:
    asyncio.run(run_calls(calls))


def test_offer_path_receipt_and_recall_happen_in_the_property_run() -> None:
    """The property above is not vacuous: a scripted run offers, receipts and then recalls a told canary."""

    async def scripted() -> None:
        generous = ApiSettings(share_min_gap_s=0, share_threshold=0.0, share_min_willingness=0.0)
        with tempfile.TemporaryDirectory(prefix="anima-priv-") as root:
            api = await ApiHarness(Path(root), api=generous).start()
            try:
                await seed(api)
                _, offer = await api.call("POST", "/v1/share", {"turn_id": "t1", "query": "湖边白鹭名字"})
                assert offer["offer"]["text"] == UNTOLD[0][0]
                await api.call("POST", "/v1/turns", turn("t1", "你下午做什么了", "去湖边了"))
                status, _ = await api.call("POST", f"/v1/share/{offer['offer']['share_id']}/receipt", {"turn_id": "t1"})
                assert status == 200
                _, life = await api.call("GET", "/v1/life")
                assert UNTOLD[0][0] in [e["text"] for e in life["events"]]
            finally:
                await api.stop()

    asyncio.run(scripted())


@pytest.fixture
async def api(tmp_path: Path) -> Any:
    harness = await ApiHarness(tmp_path).start()
    yield harness
    await harness.stop()


async def test_a_leaking_response_is_withheld_and_logged_with_ids_only(api: ApiHarness,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.api.routes import persona

    ids = await seed(api)
    leaked_id, leaked_text = next(iter(ids)), UNTOLD[0][0]
    monkeypatch.setattr(persona, "describe_persona", lambda chart, p: {"日主": "己土", "近况": leaked_text})
    status, body = await api.call("GET", "/v1/persona")
    assert status == 500 and body["error"]["code"] == "internal" and leaked_text not in json.dumps(body)
    blocked = api.log.named("privacy.blocked")
    assert blocked and blocked[-1]["life_event_ids"] == [leaked_id]
    assert UNTOLD[0][1] not in api.log.text()


async def test_a_truncated_copy_is_caught_too(api: ApiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.api.routes import persona

    await seed(api)
    monkeypatch.setattr(persona, "describe_persona", lambda chart, p: {"近况": UNTOLD[3][0][:18] + "…"})
    assert (await api.call("GET", "/v1/persona"))[0] == 500


async def test_text_already_said_in_chat_is_not_secret(api: ApiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    """She said it in a reply before the receipt came: the user saw it, so recall may show that chat turn."""
    from daemon.api.routes import persona

    await seed(api)
    await api.call("POST", "/v1/turns", turn("t1", "你今天干嘛了", UNTOLD[1][0]))
    monkeypatch.setattr(persona, "describe_persona", lambda chart, p: {"近况": UNTOLD[1][0]})
    assert (await api.call("GET", "/v1/persona"))[0] == 200


def test_short_untold_texts_match_only_whole_values() -> None:
    index = privacy.UntoldIndex(fingerprint=(1,), needles=[], exact={"散步": 7})
    assert privacy.find_leaks({"a": "我们去散步吧"}, index)[1] == []
    assert privacy.find_leaks({"a": ["散步"]}, index)[1] == [7]


def test_offer_text_is_allowed_only_when_the_route_allows_it() -> None:
    text = "下午在湖边看白鹭，给它取名叫金丝雀甲一号"
    index = privacy.UntoldIndex(fingerprint=(1,), needles=[(3, json.dumps(text, ensure_ascii=False)[1:-1])])
    body = {"offer": {"share_id": "sh_1", "text": text}, "reason": "offered"}
    assert privacy.find_leaks(body, index, allow_offer_text=True)[1] == []
    assert privacy.find_leaks(body, index, allow_offer_text=False)[1] == [3]
    smuggled = {"offer": {"share_id": text, "text": text}, "reason": "offered"}
    assert privacy.find_leaks(smuggled, index, allow_offer_text=True)[1] == [3]


def test_every_one_of_thousands_of_untold_texts_is_checked() -> None:
    texts = [f"第{i}天：在{'湖边' if i % 2 else '书店'}待了{i % 7}个小时，想起了{i}件事" for i in range(5000)]
    index = privacy.UntoldIndex(fingerprint=(1,), needles=[(i, t) for i, t in enumerate(texts)])
    assert privacy.find_leaks({"context": "普通的一天，什么都没发生"}, index)[1] == []
    for i in (0, 2500, 4999):
        assert privacy.find_leaks({"hits": [{"text": "前文……" + texts[i]}]}, index)[1] == [i]
