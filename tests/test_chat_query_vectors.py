"""The chat endpoint embeds, after each reply, the lines a short next message is recalled with (issue 23's tail).

A short message ("真的吗？") is read with the two turns before it, and recall embeds the whole query and
each line: four texts. After a reply the route embeds the user's message and the reply as query lines,
so the follow-up embeds two. These tests pin that the follow-up's model call holds only what is new,
that what is held is exactly what recall would split the next query into, that a forget empties it
(also of an embedding already under way), and that nothing is embedded when memory search is off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest

from daemon.api.http import APP
from daemon.api.query_vectors import QueryVectors
from engine.chat.request import parse_request
from engine.memory.recall import query_lines
from engine.usecases.chat import SHORT_QUERY_CHARS, next_lines, recall_query
from tests.api_support import ApiHarness, HashEmbedder, turn
from tests.chat_support import KEY, KEY_ENV, FakeModel, client, with_model

FIRST = "我下个月要去杭州出差，住在西湖边上"
REPLY = "哇，西湖边很美呀！\n记得带伞，杭州常下雨。"


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that notes each embed_queries call's texts (the model calls a request pays for)."""

    def __init__(self) -> None:
        self.query_calls: list[list[str]] = []

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.query_calls.append(list(texts))
        return super().embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # the base class embeds passages as queries
        return HashEmbedder.embed_queries(self, texts)


@pytest.fixture
async def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[ApiHarness, FakeModel,
                                                                                          CountingEmbedder]]:
    monkeypatch.setenv(KEY_ENV, KEY)
    embedder = CountingEmbedder()
    fake = await FakeModel(REPLY).start()
    api = ApiHarness(tmp_path, embedder=embedder)
    api.settings = with_model(api.settings, fake.url)
    await api.start()
    status, _ = await api.call("POST", "/v1/turns", turn("t-0", "我养了一只柯基叫豆豆", "好可爱！"))
    assert status == 200
    try:
        yield api, fake, embedder
    finally:
        await api.stop()
        await fake.stop()


def _app(api: ApiHarness) -> Any:
    return api.component.server.app[APP]


async def _settled(api: ApiHarness) -> None:
    """Wait for the work the last reply started after its response (the next lines' embedding)."""
    for task in list(_app(api)._background):
        await task


async def _ask(api: ApiHarness, messages: list[dict[str, str]], stream: bool = False) -> str:
    async with client(api.socket_path) as oa:
        if not stream:
            got = await oa.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
            return got.choices[0].message.content or ""
        chunks = await oa.chat.completions.create(model="m", messages=messages, stream=True)  # type: ignore[arg-type]
        return "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])


@pytest.mark.parametrize("stream", [False, True])
async def test_a_short_follow_up_embeds_only_the_query_and_its_new_line(served: Any, stream: bool) -> None:
    api, fake, embedder = served
    reply = await _ask(api, [{"role": "user", "content": FIRST}], stream)
    assert reply == REPLY
    await _settled(api)
    short = "真的吗？"
    assert len(short) < SHORT_QUERY_CHARS
    dialogue = [{"role": "user", "content": FIRST}, {"role": "assistant", "content": reply},
                {"role": "user", "content": short}]
    query = recall_query(parse_request({"messages": dialogue}).dialogue()).strip()
    assert query_lines(query) == [FIRST, *REPLY.split("\n"), short]  # four lines and the query: five texts
    # The upstream fails the follow-ups, so neither records a turn: both are read against the same memories.
    fake.mode = "error"
    embedder.query_calls.clear()
    with pytest.raises(openai.APIStatusError):
        await _ask(api, dialogue, stream)
    assert embedder.query_calls[0] == [query, short]  # the reply's model call: only what is new
    held_prompt = fake.system_prompt()
    assert FIRST in held_prompt  # recalled
    _app(api).state_of(None, api.ctx).query_vectors.clear()
    embedder.query_calls.clear()
    with pytest.raises(openai.APIStatusError):
        await _ask(api, dialogue, stream)
    assert embedder.query_calls[0] == [query, FIRST, *REPLY.split("\n"), short]
    assert fake.system_prompt() == held_prompt  # the held vectors recall what fresh ones do


def test_next_lines_are_the_lines_recall_splits_the_next_short_query_into() -> None:
    cases = [("你好", "你好呀"), ("  我今天\n\n很累  ", "抱抱你\n早点睡"), ("一\n二\n三\n四\n五", "六\n七\n八\n九"),
             ("只有一句话", "")]
    for user, reply in cases:
        messages = [{"role": "user", "content": user}, {"role": "user", "content": "嗯？"}]
        if reply:
            messages.insert(1, {"role": "assistant", "content": reply})
        query = recall_query(parse_request({"messages": messages}).dialogue()).strip()
        lines = query_lines(query)
        assert next_lines(user, reply) == (lines[:-1] if lines else [])  # all but the new message itself


def test_held_vectors_expire_on_her_clock_and_the_oldest_go_first() -> None:
    held = QueryVectors(capacity=2, ttl_s=600.0)
    held.put({"a": 1, "b": 2}, now=1000.0)
    assert held.get(["a", "b", "c"], now=1600.0) == {"a": 1, "b": 2}
    assert held.get(["a"], now=1600.1) == {}  # ten minutes on: embedded again, not trusted
    held.put({"c": 3}, now=1700.0)
    held.put({"d": 4}, now=1700.0)
    assert held.get(["b", "c", "d"], now=1700.0) == {"c": 3, "d": 4}
    generation = held.generation
    held.clear()
    held.put({"e": 5}, now=1700.0, generation=generation)  # embedded from texts read before the clear
    assert len(held) == 0


async def test_a_forget_empties_the_held_vectors(served: Any) -> None:
    api, _, _ = served
    await _ask(api, [{"role": "user", "content": FIRST}])
    await _settled(api)
    state = _app(api).state_of(None, api.ctx)
    assert len(state.query_vectors) == 3  # the message and the reply's two lines
    status, _ = await api.call("DELETE", "/v1/turns?all=true")
    assert status == 200
    assert len(state.query_vectors) == 0


async def test_nothing_is_embedded_ahead_when_memory_search_is_off(served: Any) -> None:
    api, _, embedder = served
    status, _ = await api.call("PUT", "/v1/control/memory_search", {"value": False})
    assert status == 200
    await api.beat(1)  # the daemon's cached switches follow the file
    embedder.query_calls.clear()
    await _ask(api, [{"role": "user", "content": FIRST}])
    await _settled(api)
    assert embedder.query_calls == []
    assert len(_app(api).state_of(None, api.ctx).query_vectors) == 0
