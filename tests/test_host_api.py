"""The host's one API server: every companion on one socket, her tokens read inside her batched beat."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
from pathlib import Path

import aiohttp

from daemon.clock import FakeClock
from engine.settings import ApiSettings
from engine.store import connect
from engine.store.tokens import make_token
from tests.api_support import T0, HashEmbedder, RecordingLog, turn
from tests.test_host import advance, make_companion, settings


async def test_one_socket_serves_every_companion_and_a_token_made_while_serving_guards_her_at_the_next_beat(
        tmp_path: Path) -> None:
    for handle in ("a1", "b2"):
        make_companion(tmp_path, handle)
    short = Path(tempfile.mkdtemp(prefix="host", dir="/tmp"))  # a Unix socket path has at most 107 bytes
    sock = short / "anima.sock"
    from daemon.host import Host

    clock = FakeClock(T0)
    config = dataclasses.replace(settings(interval_s=5.0, watch_s=0.0), api=ApiSettings(socket_path=str(sock)))
    host = Host(config, tmp_path, clock, None, embedder=HashEmbedder(), api=True)
    host.log = RecordingLog()
    await host.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as http:
            async def status(path: str, token: str | None = None) -> int:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with http.get(f"http://anima{path}", headers=headers) as response:
                    await response.read()
                    return response.status

            assert await status("/v1/companions/a1/health") == 200
            assert await status("/v1/companions/b2/health") == 200
            assert await status("/v1/health") == 200
            assert await status("/v1/state") == 404  # many mode: the scoped paths only
            conn = connect(tmp_path / "a1.db")
            try:
                token, _ = make_token(conn, T0)
            finally:
                conn.close()
            await advance(host, clock, 5.5)  # her beat re-reads her digests (in the same DB call)
            assert await status("/v1/companions/a1/health") == 401
            assert await status("/v1/companions/a1/health", token) == 200
            assert await status("/v1/companions/b2/health", token) == 403
            async with http.post("http://anima/v1/companions/b2/turns", json=turn("t1", "我的猫芝麻生病了", "别担心")) as r:
                assert r.status == 200
            indexer = host.runtimes["b2"].indexer
            assert indexer is not None
            async with asyncio.timeout(10):  # woken by the ingest, on the host's one indexing thread
                while indexer.may_have_pending():
                    await asyncio.sleep(0)
            conn = connect(tmp_path / "b2.db", readonly=True)
            try:
                assert conn.execute("SELECT count(*) FROM mem_embedding").fetchone()[0] == 2
            finally:
                conn.close()
            (tmp_path / "b2.stop").touch()
            await host.scan()
            assert await status("/v1/companions/b2/health") == 404
    finally:
        await host.shutdown()
        shutil.rmtree(short, ignore_errors=True)
    assert not sock.exists()
