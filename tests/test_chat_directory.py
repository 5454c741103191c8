"""Directory mode (acceptance 5): two companions behind one host each get their own prompt and memories on
/v1/companions/{handle}/chat/completions, with the official openai client over the one socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.companion import create_companion
from engine.store import connect, migrate
from tests.api_support import T0, DirectoryHarness, turn
from tests.chat_support import KEY, KEY_ENV, FakeModel, client, with_model


def _make(path: Path, name: str) -> None:
    conn = connect(path)
    try:
        migrate(conn, T0)
        create_companion(conn, name=name, birth_local="1999-08-01 07:00", tz="Asia/Shanghai", place="杭州", sect=2,
                         now=T0)
    finally:
        conn.close()


async def test_two_companions_behind_one_host_get_their_own_prompts_and_memories(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    _make(tmp_path / "ana.db", "安安")
    _make(tmp_path / "bo.db", "博博")
    fake = await FakeModel("好呀。").start()
    host = DirectoryHarness(tmp_path, ["ana", "bo"])
    host.settings = host.server.settings = with_model(host.settings, fake.url)
    await host.start()
    try:
        status, _ = await host.call("POST", "/v1/companions/ana/turns", turn("t1", "我最喜欢的水果是山竹，夏天天天吃", "记住啦"))
        assert status == 200
        host.clock.advance(600)
        question = [{"role": "user", "content": "你还记得我最喜欢什么水果吗？"}]
        async with client(host.settings.api.socket_path, base="http://anima/v1/companions/ana") as oa:
            await oa.chat.completions.create(model="x", messages=question)
        async with client(host.settings.api.socket_path, base="http://anima/v1/companions/bo") as oa:
            await oa.chat.completions.create(model="x", messages=question)
        ana_prompt, bo_prompt = fake.system_prompt(0), fake.system_prompt(1)
        assert "安安" in ana_prompt and "山竹" in ana_prompt and "博博" not in ana_prompt
        assert "博博" in bo_prompt and "山竹" not in bo_prompt and "安安" not in bo_prompt
        _, ana = await host.call("GET", "/v1/companions/ana/state")
        _, bo = await host.call("GET", "/v1/companions/bo/state")
        assert (ana["counts"]["chat_turns"], bo["counts"]["chat_turns"]) == (2, 1)
        status, body = await host.call("POST", "/v1/chat/completions", {"messages": question})
        assert status == 404 and body["error"]["type"] == "not_found_error"  # unscoped: a directory has no default
    finally:
        await host.stop()
        await fake.stop()
