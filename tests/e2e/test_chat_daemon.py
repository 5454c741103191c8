"""Acceptance 6: the real daemon, configured through [model] base_url, name and api_key_env exactly (with an
[api] socket_path beside them), answered through the official openai client over its socket, plain and streamed,
with a loopback upstream; the turn is recorded and recallable; the key and the chat text are in no log line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.api_support import SocketClient
from tests.chat_support import KEY, KEY_ENV, FakeModel, client
from tests.conftest import write_config

pytestmark = pytest.mark.e2e

USER = "我明天要去北京出差三天，有点紧张"


async def test_the_official_client_talks_to_the_real_daemon_configured_by_model_section(
        tmp_path: Path, start_daemon: Any) -> None:
    fake = await FakeModel("北京这几天降温，记得多带件外套，出差顺利！").start()
    sock = Path(tempfile.mkdtemp(prefix="ac-", dir="/tmp")) / "her.sock"  # short: socket paths are limited
    config = write_config(tmp_path / "config.toml", extra=(
        f'[model]\nbase_url = "{fake.url}"\nname = "fake-model"\napi_key_env = "{KEY_ENV}"\n'
        f'[api]\nsocket_path = "{sock}"\n'))
    daemon = start_daemon(tmp_path / "anima.db", config=config, env={KEY_ENV: KEY})
    try:
        async with client(str(sock)) as oa:
            plain = await oa.chat.completions.create(model="any", messages=[{"role": "user", "content": USER}])
            assert plain.choices[0].message.content == fake.reply
            stream = await oa.chat.completions.create(model="any", stream=True, messages=[
                {"role": "user", "content": USER}, {"role": "assistant", "content": fake.reply},
                {"role": "user", "content": "谢谢你，我会的"}])
            assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == fake.reply
        assert [r["model"] for r in fake.requests] == ["fake-model", "fake-model"]
        assert all(h["Authorization"] == f"Bearer {KEY}" for h in fake.headers)
        assert "小安" in fake.system_prompt(0)
        async with SocketClient(str(sock)) as her:
            _, state = await her.call("GET", "/v1/state")
            assert state["counts"]["chat_turns"] == 2
            _, ctx = await her.call("POST", "/v1/context", {"query": "北京出差"})
            assert "北京" in ctx["context"]
        assert daemon.stop() == 0
        log = daemon.log_text()
        assert "api.chat_replied" in log
        assert KEY not in log and USER not in log and "北京" not in log
    finally:
        await fake.stop()
