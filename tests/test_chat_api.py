"""POST /v1/chat/completions with the official openai client over the Unix socket, against a fake upstream on loopback.

Acceptance 1-3 of issue 23: the reply arrives unchanged (plain and streamed), the upstream got her system
prompt (name, mood and activity in words, the remembered turn), the configured model name and key, and the
turn is then recallable; upstream down, slow, erroring or garbage gives an OpenAI-shaped error, records
nothing, and the next request works; a client gone mid-stream records nothing.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from engine import inner
from engine.settings import ApiSettings
from engine.store import transaction
from engine.store.core import read_switches
from engine.store.relations import insert_relation
from tests.api_support import ApiHarness, turn
from tests.chat_support import KEY, KEY_ENV, FakeModel, client, with_model

REMEMBERED = "我养了一只叫豆豆的柯基，它最爱追飞盘"


async def _counts(api: ApiHarness) -> dict[str, Any]:
    status, state = await api.call("GET", "/v1/state")
    assert status == 200
    return dict(state["counts"])


@pytest.fixture
async def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[ApiHarness, FakeModel]]:
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = await FakeModel("豆豆呀，我当然记得，它还爱追飞盘吗？").start()
    api = ApiHarness(tmp_path)
    api.settings = with_model(api.settings, fake.url, timeout_s=1.5)
    await api.start()
    # She is living her day (an activity), and she remembers one turn.
    await api.db(lambda conn: inner.step_inner(conn, api.settings, None, api.clock.now(), read_switches(conn)))
    status, _ = await api.call("POST", "/v1/turns", turn("t-dog", REMEMBERED, "好可爱！"))
    assert status == 200
    api.clock.advance(2 * 3600)  # past the chat's quiet time: she is back to her own day
    await api.db(lambda conn: inner.step_inner(conn, api.settings, None, api.clock.now(), read_switches(conn)))
    try:
        yield api, fake
    finally:
        await api.stop()
        await fake.stop()


async def test_plain_reply_arrives_unchanged_with_her_prompt_model_and_key_and_is_recallable(served: Any) -> None:
    api, fake = served
    before = await _counts(api)
    _, state = await api.call("GET", "/v1/state")  # what she is doing when the message arrives
    async with client(api.socket_path) as oa:
        got = await oa.chat.completions.create(model="whatever", messages=[
            {"role": "system", "content": "回答要简短。"},
            {"role": "user", "content": "你还记得我的狗叫什么名字吗？"}])
    assert got.choices[0].message.content == fake.reply
    assert got.choices[0].finish_reason == "stop"
    sent = fake.requests[-1]
    assert sent["model"] == "fake-model"
    assert fake.headers[-1]["Authorization"] == f"Bearer {KEY}"
    prompt = fake.system_prompt()
    assert "小安" in prompt and "心情" in prompt and "豆豆" in prompt  # name, mood in words, the remembered turn
    activity = state["activity"]
    assert activity is not None and activity["kind"] != "chat"
    assert activity["label"] in prompt or "睡梦" in prompt  # what she is doing, or that the message woke her
    # Her prompt first, the client's system message kept after hers, then the conversation.
    assert [m["role"] for m in sent["messages"]] == ["system", "system", "user"]
    assert sent["messages"][1]["content"] == "回答要简短。"
    after = await _counts(api)
    assert after["chat_turns"] == before["chat_turns"] + 1
    status, ctx = await api.call("POST", "/v1/context", {"query": "豆豆还爱追飞盘吗"})
    assert status == 200 and "我当然记得" in ctx["context"]


async def test_streamed_reply_arrives_unchanged_and_is_recorded_after_the_last_chunk(served: Any) -> None:
    api, fake = served
    before = await _counts(api)
    async with client(api.socket_path) as oa:
        stream = await oa.chat.completions.create(model="x", stream=True, messages=[
            {"role": "user", "content": "今天有点累，陪我聊聊豆豆吧"}])
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    assert "".join(pieces) == fake.reply
    assert fake.requests[-1]["stream"] is True
    assert (await _counts(api))["chat_turns"] == before["chat_turns"] + 1
    status, ctx = await api.call("POST", "/v1/context", {"query": "豆豆还爱追飞盘吗"})
    assert "我当然记得" in ctx["context"]


async def test_the_same_conversation_sent_again_records_nothing_new(served: Any) -> None:
    api, fake = served
    messages = [{"role": "user", "content": "我今天升职了！"}]
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", messages=messages)
        once = await _counts(api)
        await oa.chat.completions.create(model="x", messages=messages)  # a retry
        assert await _counts(api) == once
        # The next turn repeats the earlier messages: only its own last user message and reply are new.
        await oa.chat.completions.create(model="x", messages=[*messages, {"role": "assistant", "content": fake.reply},
                                                              {"role": "user", "content": "晚上去吃火锅庆祝"}])
        after = await _counts(api)
        assert after["chat_messages"] == once["chat_messages"] + 2
        # Past [chat] repeat_window_s the same words are a new turn (people do say the same thing twice).
        api.clock.advance(api.settings.chat.repeat_window_s + 1)
        await oa.chat.completions.create(model="x", messages=messages)
    assert (await _counts(api))["chat_turns"] == after["chat_turns"] + 1


@pytest.mark.parametrize("mode, status", [("error", 502), ("garbage", 502), ("slow", 504)])
async def test_upstream_failure_is_an_openai_error_records_nothing_and_the_next_request_works(
        served: Any, mode: str, status: int) -> None:
    api, fake = served
    before = await _counts(api)
    _, state_before = await api.call("GET", "/v1/state")
    fake.mode, fake.delay_s = mode, 3.0
    async with client(api.socket_path) as oa:
        with pytest.raises(openai.APIStatusError) as caught:
            await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "我外婆今天走了"}])
        assert caught.value.status_code == status
        error = caught.value.body
        assert isinstance(error, dict) and error["type"] == "api_error" and error["message"]
        assert await _counts(api) == before
        _, state_after = await api.call("GET", "/v1/state")
        # Her prompt was written as she would feel after reading it, but nothing of that was kept.
        assert "难过" in fake.system_prompt() and state_after["mood"] == state_before["mood"]
        fake.mode = "plain"
        got = await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "在吗？"}])
    assert got.choices[0].message.content == fake.reply
    assert (await _counts(api))["chat_turns"] == before["chat_turns"] + 1


async def test_upstream_down_is_a_502_and_nothing_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = await FakeModel().start()
    url = fake.url
    await fake.stop()  # nobody listens there any more
    api = ApiHarness(tmp_path)
    api.settings = with_model(api.settings, url)
    await api.start()
    try:
        async with client(api.socket_path) as oa:
            with pytest.raises(openai.APIStatusError) as caught:
                await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "在吗？"}])
        assert caught.value.status_code == 502
        assert (await _counts(api))["chat_turns"] == 0
    finally:
        await api.stop()


async def test_a_stream_that_breaks_after_the_first_chunk_ends_with_an_error_and_records_nothing(served: Any) -> None:
    api, fake = served
    before = await _counts(api)
    fake.mode = "stream_garbage"
    async with client(api.socket_path) as oa:
        stream = await oa.chat.completions.create(model="x", stream=True,
                                                  messages=[{"role": "user", "content": "讲个故事吧"}])
        with pytest.raises(openai.APIError):
            async for _ in stream:
                pass
    assert await _counts(api) == before


async def test_a_client_gone_mid_stream_records_nothing_and_the_daemon_keeps_serving(served: Any) -> None:
    api, fake = served
    before = await _counts(api)
    fake.mode, fake.delay_s = "stall", 0.8
    body = json.dumps({"model": "x", "stream": True, "messages": [{"role": "user", "content": "讲个故事吧"}]})
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=api.socket_path)) as session:
        resp = await session.post("http://anima/v1/chat/completions", data=body,
                                  headers={"Content-Type": "application/json"})
        assert resp.status == 200
        first = await resp.content.readline()
        assert first.startswith(b"data: ")
        resp.close()  # gone before her reply is complete
    await asyncio.sleep(1.2)  # let the stalled upstream finish its reply: the daemon must still record nothing
    assert await _counts(api) == before
    fake.mode = "plain"
    async with client(api.socket_path) as oa:
        got = await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "还在吗"}])
    assert got.choices[0].message.content == fake.reply


async def test_tools_and_images_are_refused_with_an_openai_400_naming_the_field(served: Any) -> None:
    api, fake = served
    async with client(api.socket_path) as oa:
        with pytest.raises(openai.BadRequestError) as caught:
            await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], tools=[
                {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
        assert caught.value.body["param"] == "tools"  # type: ignore[index]
        with pytest.raises(openai.BadRequestError) as caught:
            await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}])
        assert caught.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    assert fake.requests == []


async def test_context_accepts_messages_in_openai_shape(served: Any) -> None:
    api, _ = served
    status, by_messages = await api.call("POST", "/v1/context", {"messages": [
        {"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好呀"},
        {"role": "user", "content": "我那只柯基叫什么来着？"}]})
    assert status == 200
    # A short last message is read with the turn before it, as the chat endpoint reads it.
    assert by_messages["query"].splitlines() == ["你好", "你好呀", "我那只柯基叫什么来着？"]
    assert "豆豆" in by_messages["context"]
    status, error = await api.call("POST", "/v1/context", {"messages": [{"role": "assistant", "content": "嗯"}]})
    assert status == 400 and error["error"]["code"] == "bad_request"


async def test_the_example_script_talks_to_her_over_the_socket(served: Any) -> None:
    api, fake = served
    repo = Path(__file__).resolve().parents[1]
    for extra in ([], ["--no-stream"]):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "examples/talk.py", "--socket", api.socket_path, *extra, cwd=repo,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate("在吗？\n\n".encode()), 60)
        assert proc.returncode == 0, err.decode()
        assert fake.reply in out.decode()
    assert len(fake.requests) == 2


async def test_state_and_prompt_say_her_feelings_in_the_same_chinese_words(served: Any) -> None:
    api, fake = served
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "我外婆今天走了，我好难受"}])
        _, state = await api.call("GET", "/v1/state")
        words = state["mood"]["words_zh"]
        assert words and all(re.fullmatch(r"[\u4e00-\u9fff、]+", w) for w in words)
        # Words that fit the cause (issue 23 item 6): after bad news, never a glad or hostile word.
        assert not set(words) & {"开心", "很开心", "放松", "满足", "高兴", "兴高采烈", "烦躁", "生气"}, words
        # The English label stays for compatibility and follows the feeling, not the PAD octant.
        assert state["mood"]["label"] in {"sad", "tender", "worried"}, state["mood"]["label"]
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "陪我待一会儿好吗"}])
    assert "、".join(words) in fake.system_prompt()
    assert "因为对方" in fake.system_prompt()  # and why: the cause, with the user as 对方 in her prompt


async def test_over_tcp_the_sdk_api_key_is_the_bearer_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("ANIMA_TEST_TOKEN", "tcp-token-0123456789abcdef")
    fake = await FakeModel().start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api = ApiHarness(tmp_path, api=ApiSettings(tcp_host="127.0.0.1", tcp_port=port, token_env="ANIMA_TEST_TOKEN"))
    api.settings = with_model(api.settings, fake.url)
    await api.start()
    try:
        question = [{"role": "user", "content": "在吗？"}]
        async with openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong-token-0123456789",
                                      max_retries=0) as wrong:
            with pytest.raises(openai.AuthenticationError) as caught:
                await wrong.chat.completions.create(model="x", messages=question)
            assert caught.value.body["type"] == "authentication_error"  # type: ignore[index]
        async with openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="tcp-token-0123456789abcdef",
                                      max_retries=0) as right:
            got = await right.chat.completions.create(model="x", messages=question)
        assert got.choices[0].message.content == fake.reply and len(fake.requests) == 1
    finally:
        await api.stop()
        await fake.stop()


async def test_her_prompt_carries_the_relationship_nicknames_and_taboos(served: Any) -> None:
    api, fake = served

    def plant(conn: Any) -> None:
        now = api.clock.now()
        with transaction(conn):
            insert_relation(conn, kind="nickname", statement="2026-05-27 用户说：以后你就叫我小林吧", valid_from=now - 86400,
                            recorded_at=now - 86400, evidence=[])
            insert_relation(conn, kind="taboo", statement="2026-05-27 用户说：不要叫我宝宝", valid_from=now - 86400,
                            recorded_at=now - 86400, evidence=[])

    await api.db(plant)
    async with client(api.socket_path) as oa:
        await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "今天天气真好"}])
    prompt = fake.system_prompt()
    assert "以后你就叫我小林吧" in prompt and "禁忌（一定要遵守）：2026-05-27 用户说：不要叫我宝宝" in prompt


@pytest.mark.parametrize("mode", ["ignore_stream", "no_done"])
async def test_a_model_server_that_streams_loosely_still_gives_a_streamed_reply(served: Any, mode: str) -> None:
    api, fake = served
    before = await _counts(api)
    fake.mode = mode
    async with client(api.socket_path) as oa:
        stream = await oa.chat.completions.create(model="x", stream=True,
                                                  messages=[{"role": "user", "content": "讲个笑话吧"}])
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == fake.reply
    assert (await _counts(api))["chat_turns"] == before["chat_turns"] + 1


async def test_a_stream_that_stalls_past_timeout_ends_with_an_error_and_records_nothing(served: Any) -> None:
    api, fake = served
    before = await _counts(api)
    fake.mode, fake.delay_s = "stall", 3.0  # [model] timeout_s is 1.5 here: between two chunks
    async with client(api.socket_path) as oa:
        stream = await oa.chat.completions.create(model="x", stream=True,
                                                  messages=[{"role": "user", "content": "讲个长故事吧"}])
        with pytest.raises(openai.APIError) as caught:
            async for _ in stream:
                pass
        assert "timeout_s" in caught.value.message
    assert await _counts(api) == before
    assert api.log.named("api.chat_upstream_failed")[-1]["status"] == 504


async def test_a_message_at_night_wakes_her_and_her_prompt_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = await FakeModel("嗯……怎么了？").start()
    api = ApiHarness(tmp_path)  # her clock starts at 04:26 in Hangzhou
    api.settings = with_model(api.settings, fake.url)
    await api.start()
    try:
        await api.db(lambda conn: inner.step_inner(conn, api.settings, None, api.clock.now(), read_switches(conn)))
        _, before = await api.call("GET", "/v1/state")
        assert before["activity"]["kind"] == "sleep"
        async with client(api.socket_path) as oa:
            await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "你睡了吗"}])
        assert "从睡梦中叫醒" in fake.system_prompt() and "睡觉" not in fake.system_prompt()
        _, after = await api.call("GET", "/v1/state")
        assert after["activity"]["kind"] != "sleep"  # the turn, recorded, woke her for real
    finally:
        await api.stop()
        await fake.stop()
