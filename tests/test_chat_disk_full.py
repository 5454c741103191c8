"""A streamed reply whose turn cannot be recorded (her disk filled while the model answered): the stream ends
with an OpenAI error event instead of [DONE], nothing of the turn is kept, and once there is room the next
request is answered and recorded.

Her file lives on a small tmpfs mounted for the test (root only; skipped with the reason otherwise). The
fake model server fills that disk as the request reaches it, after her prompt was composed: the real
SQLITE_FULL of the real file, no fake of anima's own code.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import openai
import pytest

from tests.api_support import ApiHarness
from tests.chat_support import KEY, KEY_ENV, FakeModel, client, with_model
from tests.conftest import fill_disk

pytestmark = pytest.mark.e2e


def _fill_her_disk(db: Path, folder: Path) -> list[Path]:
    """A filler file to the last block, then her WAL grown until it cannot grow: no room for her next commit."""
    filler = fill_disk(folder)
    conn = sqlite3.connect(db, timeout=5)
    with contextlib.suppress(sqlite3.OperationalError):
        conn.execute("CREATE TABLE IF NOT EXISTS probe_filler (pad BLOB)")
        while True:
            conn.execute("INSERT INTO probe_filler VALUES (zeroblob(65536))")
            conn.commit()
    conn.close()
    return [filler]


async def _turns(api: ApiHarness) -> int:
    status, state = await api.call("GET", "/v1/state")
    assert status == 200
    return int(state["counts"]["chat_turns"])


async def test_a_turn_that_cannot_be_recorded_ends_the_stream_with_an_error_and_keeps_nothing(
        tmp_path: Path, small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    fake = await FakeModel("我在呢，慢慢说。").start()
    api = ApiHarness(small_disk)
    api.settings = with_model(api.settings, fake.url, timeout_s=5)
    await api.start()
    fillers: list[Path] = []
    try:
        before = await _turns(api)
        fake.on_request = lambda: fillers.extend(_fill_her_disk(api.db_path, small_disk))
        pieces: list[str] = []
        async with client(api.socket_path) as oa:
            stream = await oa.chat.completions.create(model="x", stream=True, messages=[
                {"role": "user", "content": "今天好累，想跟你说说话"}])
            with pytest.raises(openai.APIError) as raised:
                async for chunk in stream:
                    pieces.extend(c.delta.content or "" for c in chunk.choices)
        assert "".join(pieces) == fake.reply  # the reply reached the client whole ...
        assert "full" in str(raised.value).lower() or "storage" in str(raised.value).lower(), raised.value
        assert any(event == "api.chat_record_failed" for _, event, _ in api.log.events)  # ... and was not recorded
        fake.on_request = None
        for path in fillers:
            path.unlink()
        with contextlib.suppress(sqlite3.OperationalError):  # room again: the probe rows go
            conn = sqlite3.connect(api.db_path, timeout=5)
            conn.execute("DROP TABLE probe_filler")
            conn.commit()
            conn.close()
        assert await _turns(api) == before
        async with client(api.socket_path) as oa:
            got = await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "现在好了吗"}])
        assert got.choices[0].message.content == fake.reply
        assert await _turns(api) == before + 1
    finally:
        await api.stop()
        await fake.stop()


