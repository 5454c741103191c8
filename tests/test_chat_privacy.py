"""Sharing that stays honest through the chat endpoint: untold life that was not offered never reaches the upstream,
an offered event becomes told only when her reply tells it, and no chat text or key reaches a log line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from engine.settings import ApiSettings
from engine.store.life import add_life_event
from tests.api_support import ApiHarness
from tests.chat_support import KEY, KEY_ENV, FakeModel, client, with_model

CANARIES = ["去了趟金鱼巷看到蓝色邮筒CANARY-A1", "在旧书店翻到一本泛黄的诗集CANARY-B2",
            "楼下的面馆换了新老板CANARY-C3", "学会了用胶片相机拍晚霞CANARY-D4"]
EVENT = "下午在西湖边画了一张速写，遇到一只橘猫一直蹭我的腿"
TELLS = "我今天下午去西湖边画速写啦，还遇到一只橘猫，一直蹭我的腿，好可爱！你呢？"
ELSEWHERE = "你今天过得怎么样？我下午一直在家，没干什么特别的。"


async def _start(tmp_path: Path, reply: str, *, offers: bool) -> tuple[ApiHarness, FakeModel]:
    fake = await FakeModel(reply).start()
    # A low threshold and no gap: she offers whenever she has something (the policy is tested elsewhere).
    api_settings = ApiSettings(share_threshold=0.0 if offers else 1.0, share_min_gap_s=0.0,
                               share_min_willingness=0.0)
    api = ApiHarness(tmp_path, api=api_settings)
    api.settings = with_model(api.settings, fake.url)
    await api.start()
    return api, fake


@pytest.fixture
async def stopper() -> AsyncIterator[list[Any]]:
    running: list[Any] = []
    yield running
    for thing in running:
        await thing.stop()


async def _plant(api: ApiHarness, texts: list[str]) -> dict[int, str]:
    def write(conn: Any) -> dict[int, str]:
        now = api.clock.now()
        return {add_life_event(conn, t, now - 300 * (i + 1), told=False, origin="life", kind="completed"): t
                for i, t in enumerate(texts)}
    return await api.db(write)


async def _told(api: ApiHarness, event_id: int) -> int:
    row = await api.db(lambda c: c.execute("SELECT told FROM life_event WHERE id = ?", (event_id,)).fetchone())
    return int(row[0])


async def _offered(api: ApiHarness) -> set[int]:
    rows = await api.db(lambda c: c.execute("SELECT life_event_id FROM share_offer").fetchall())
    return {int(r[0]) for r in rows}


async def test_no_untold_canary_that_was_not_offered_reaches_any_upstream_request(
        tmp_path: Path, stopper: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    api, fake = await _start(tmp_path, "嗯嗯，我在听。", offers=True)
    stopper.extend([api, fake])
    planted = await _plant(api, CANARIES)
    async with client(api.socket_path) as oa:
        history: list[dict[str, str]] = []
        for text in ["今天天气真好", "你在做什么呢？", "给我讲讲你今天的事吧", "金鱼巷你去过吗？诗集好看吗", "晚安"]:
            history.append({"role": "user", "content": text})
            got = await oa.chat.completions.create(model="x", messages=history, stream=len(history) % 2 == 0)
            reply = got.choices[0].message.content if hasattr(got, "choices") else "".join(
                [c.choices[0].delta.content or "" async for c in got if c.choices])
            history.append({"role": "assistant", "content": reply or ""})
            api.clock.advance(120)
    offered = await _offered(api)
    assert 1 <= len(offered) <= len(fake.requests)  # she offered, at most once per request
    sent = fake.sent_text()
    assert any(planted[i] in sent for i in offered)  # an offered event does reach her prompt: the scan can see
    for event_id, text in planted.items():
        if event_id not in offered:
            assert text not in sent and text[-8:] not in sent, f"untold canary {event_id} reached the model"


async def test_nothing_untold_reaches_the_model_when_sharing_is_off(
        tmp_path: Path, stopper: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    api, fake = await _start(tmp_path, "嗯。", offers=True)
    stopper.extend([api, fake])
    await _plant(api, CANARIES)
    status, _ = await api.call("PUT", "/v1/control/sharing", {"value": False})
    assert status == 200
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "给我讲讲你今天的事吧"}])
    assert fake.requests and "CANARY" not in fake.sent_text()


async def test_an_offered_event_becomes_told_when_her_reply_tells_it(
        tmp_path: Path, stopper: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    api, fake = await _start(tmp_path, TELLS, offers=True)
    stopper.extend([api, fake])
    (event_id,) = await _plant(api, [EVENT])
    async with client(api.socket_path) as oa:
        got = await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "你今天下午干嘛了？"}])
    assert got.choices[0].message.content == TELLS  # the privacy projection lets her own told words pass
    assert EVENT in fake.system_prompt()  # offered in her prompt
    assert await _told(api, event_id) == 1
    status, ctx = await api.call("POST", "/v1/context", {"query": "西湖边的橘猫"})
    assert status == 200 and "橘猫" in ctx["context"]  # told life is recallable


async def test_an_offered_event_stays_untold_when_her_reply_does_not_tell_it(
        tmp_path: Path, stopper: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    api, fake = await _start(tmp_path, ELSEWHERE, offers=True)
    stopper.extend([api, fake])
    (event_id,) = await _plant(api, [EVENT])
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", stream=True, messages=[
            {"role": "user", "content": "你今天下午干嘛了？"}])
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "你今天下午干嘛了？"}])
    assert EVENT in fake.system_prompt(0)
    assert await _told(api, event_id) == 0


async def test_no_chat_text_prompt_or_key_reaches_a_log_line(
        tmp_path: Path, stopper: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    api, fake = await _start(tmp_path, TELLS, offers=True)
    stopper.extend([api, fake])
    await _plant(api, [EVENT])
    user_text = "我外婆今天走了，我好难受"
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": user_text}])
        stream = await oa.chat.completions.create(model="x", stream=True, messages=[
            {"role": "user", "content": user_text + "。"}])
        async for _ in stream:
            pass
        fake.mode = "error"
        with pytest.raises(openai.APIStatusError):
            await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": user_text + "！"}])
    logged = api.log.text()
    assert api.log.named("api.chat_replied")  # the log did record the replies, by id and length
    for secret in (user_text, "外婆", TELLS[:12], KEY, EVENT[:8], fake.system_prompt()[:12]):
        assert secret not in logged



@pytest.mark.parametrize("message, offered", [("我外婆今天走了，我好难受", False), ("今天天气真好！你下午干嘛了？", True)])
async def test_she_decides_to_share_as_she_feels_after_reading_the_message(
        tmp_path: Path, stopper: list[Any], monkeypatch: pytest.MonkeyPatch, message: str, offered: bool) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    api, fake = await _start(tmp_path, "嗯。", offers=True)
    stopper.extend([api, fake])
    await _plant(api, [EVENT])
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": message}])
    # Bad news in this very message holds her own small news back (issue 24's rule, on the mood after reading).
    assert (EVENT in fake.system_prompt()) is offered
