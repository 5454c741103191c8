"""API security: socket mode and group, bearer token on loopback TCP, non-loopback refused, body limit, no tracebacks."""

from __future__ import annotations

import asyncio
import grp
import os
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from daemon.api.listen import socket_path
from engine.errors import ConfigError
from engine.settings import ApiSettings
from tests.api_support import ApiHarness, turn

TOKEN = "t0ken-for-tests-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiHarness]:
    harness = await ApiHarness(tmp_path).start()
    yield harness
    await harness.stop()


async def test_socket_is_mode_0660(api: ApiHarness) -> None:
    mode = os.stat(api.socket_path).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o660


async def test_socket_group_is_applied_and_unknown_group_refused(tmp_path: Path) -> None:
    group = grp.getgrgid(os.getgid()).gr_name
    harness = await ApiHarness(tmp_path / "a", api=ApiSettings(socket_group=group)).start()
    try:
        assert os.stat(harness.socket_path).st_gid == os.getgid()
    finally:
        await harness.stop()
    bad = ApiHarness(tmp_path / "b", api=ApiSettings(socket_group="no-such-group-anima"))
    with pytest.raises(ConfigError, match="socket_group"):
        await bad.start()
    assert not Path(bad.socket_path).exists()
    await bad.stop()


def test_socket_path_rules(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    assert socket_path(ApiSettings(), db, {}) == tmp_path / "her.db.sock"
    assert socket_path(ApiSettings(), db, {"STATE_DIRECTORY": "/var/lib/anima:/x"}) == Path("/var/lib/anima/anima.sock")
    assert socket_path(ApiSettings(), db, {"STATE_DIRECTORY": "/var/lib/anima", "RUNTIME_DIRECTORY": "/run/anima"}) \
        == Path("/run/anima/anima.sock")
    assert socket_path(ApiSettings(socket_path="/run/a.sock"), db, {"STATE_DIRECTORY": "/x"}) == Path("/run/a.sock")


async def test_tcp_needs_the_bearer_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANIMA_TEST_TOKEN", TOKEN)
    port = free_port()
    harness = await ApiHarness(tmp_path, api=ApiSettings(tcp_host="127.0.0.1", tcp_port=port,
                                                         token_env="ANIMA_TEST_TOKEN")).start()
    try:
        url = f"http://127.0.0.1:{port}/v1/health"
        async with aiohttp.ClientSession() as s:
            async with s.get(url) as r:
                assert r.status == 401 and (await r.json())["error"]["code"] == "unauthorized"
                assert r.headers["WWW-Authenticate"].startswith("Bearer")
            async with s.get(url, headers={"Authorization": "Bearer wrong-token-wrong-token"}) as r:
                assert r.status == 401
            async with s.post(f"http://127.0.0.1:{port}/v1/turns", json=turn("t1", "你好", "嗨")) as r:
                assert r.status == 401
            async with s.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as r:
                assert r.status == 200 and (await r.json())["alive"] is True
        # The refused POST wrote nothing; the Unix socket needs no token.
        assert (await harness.call("GET", "/v1/state"))[1]["counts"]["chat_messages"] == 0
    finally:
        await harness.stop()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
async def test_non_loopback_tcp_host_is_refused_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         host: str) -> None:
    monkeypatch.setenv("ANIMA_TEST_TOKEN", TOKEN)
    harness = ApiHarness(tmp_path, api=ApiSettings(tcp_host=host, tcp_port=free_port(), token_env="ANIMA_TEST_TOKEN"))
    with pytest.raises(ConfigError, match="loopback"):
        await harness.start()
    assert not Path(harness.socket_path).exists()  # nothing was bound
    await harness.stop()


async def test_tcp_without_a_token_in_the_environment_is_refused(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANIMA_TEST_TOKEN", raising=False)
    harness = ApiHarness(tmp_path, api=ApiSettings(tcp_port=free_port(), token_env="ANIMA_TEST_TOKEN"))
    with pytest.raises(ConfigError, match="token"):
        await harness.start()
    await harness.stop()


async def test_body_over_the_limit_is_413_from_the_header(api: ApiHarness) -> None:
    limit = api.settings.api.max_body_bytes
    status, body = await api.call("POST", "/v1/turns", raw=b"x" * (limit + 1))
    assert status == 413 and body["error"]["code"] == "too_large"


async def test_413_comes_without_reading_the_whole_body(api: ApiHarness) -> None:
    """Announce 50 MB, send 1 KB, and the answer still comes: the daemon never waited for the rest."""
    reader, writer = await asyncio.open_unix_connection(api.socket_path)
    writer.write(b"POST /v1/turns HTTP/1.1\r\nHost: anima\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 52428800\r\n\r\n" + b"{" + b" " * 1023)
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
    assert head.startswith(b"HTTP/1.1 413")
    writer.close()


async def test_chunked_body_over_the_limit_is_413(api: ApiHarness) -> None:
    limit = api.settings.api.max_body_bytes

    async def chunks():  # no Content-Length: the limit applies while reading
        for _ in range(limit // 4096 + 4):
            yield b" " * 4096

    assert api.session is not None
    async with api.session.post("http://anima/v1/turns", data=chunks(),
                                headers={"Content-Type": "application/json"}) as r:
        assert r.status == 413


async def test_internal_errors_carry_no_traceback_or_detail(api: ApiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.api.routes import state

    def broken(*args: object) -> None:
        raise RuntimeError("secret internal detail /home/x.py line 3")

    monkeypatch.setattr(state, "read_state", broken)
    status, body = await api.call("GET", "/v1/state")
    assert status == 500 and body["error"]["code"] == "internal"
    assert "secret" not in body["error"]["message"] and "Traceback" not in body["error"]["message"]
    assert api.log.named("api.failed")[-1]["error"] == "RuntimeError"


async def test_a_response_that_breaks_the_contract_is_withheld(api: ApiHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    from daemon.api.routes import control

    monkeypatch.setattr(control, "_view", lambda spec, value: {"key": spec.name, "surprise": True})
    status, body = await api.call("GET", "/v1/control/sharing")
    assert status == 500 and body["error"]["code"] == "internal"
    assert "getControl" in api.log.named("api.response_invalid")[-1]["detail"]



async def test_a_live_socket_of_another_process_is_not_stolen(tmp_path: Path) -> None:
    first = await ApiHarness(tmp_path / "a").start()
    try:
        second = ApiHarness(tmp_path / "b", api=ApiSettings(socket_path=first.socket_path))
        with pytest.raises(ConfigError, match="in use"):
            await second.start()
        assert (await first.call("GET", "/v1/health"))[0] == 200
        await second.stop()
    finally:
        await first.stop()


async def test_a_stale_socket_file_is_replaced(tmp_path: Path) -> None:
    harness = ApiHarness(tmp_path)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(harness.socket_path)
    stale.close()  # the file stays, nobody listens: what a crash leaves behind
    await harness.start()
    try:
        assert (await harness.call("GET", "/v1/health"))[0] == 200
    finally:
        await harness.stop()


async def test_a_busy_tcp_port_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANIMA_TEST_TOKEN", TOKEN)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        harness = ApiHarness(tmp_path, api=ApiSettings(tcp_port=port, token_env="ANIMA_TEST_TOKEN"))
        with pytest.raises(ConfigError, match="cannot listen"):
            await harness.start()
        assert not Path(harness.socket_path).exists()
        await harness.stop()
