"""The API under abuse (issue 11): every refusal in the Error shape, nothing changed, no request bytes in any log.

All against the real component on a Unix socket (tests/api_support.ApiHarness); malformed HTTP is
written on a raw socket because no client library can send it. Each test names the defect it covers.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from daemon.api import privacy
from daemon.api.gate import ConnectionGate, RateLimitedLog, connection_limit
from engine.errors import InputError
from engine.memory.importer import load_history_turns
from engine.settings import ApiSettings
from engine.snapshot import table_digests
from engine.store.life import add_life_event
from engine.times import parse_client_instant
from tests.api_support import T0, ApiHarness, turn

CANARY = "CANARY-req-5e1f"
SECRET = "昨晚偷偷给金丝雀丙三号写了一封很长很长的信"  # longer than privacy.PREFIX_CHARS
JSON_HEADERS = {"Content-Type": "application/json"}


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[ApiHarness]:
    harness = await ApiHarness(tmp_path, api=ApiSettings(body_timeout_s=0.5, header_timeout_s=0.5)).start()
    yield harness
    await harness.stop()


async def raw(path: str, data: bytes, *, close_after: bool = False, wait_s: float = 10.0) -> bytes:
    """Write `data` on a fresh connection and read until the daemon closes it (bounded by wait_s)."""
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        writer.write(data)
        with contextlib.suppress(ConnectionError):  # the daemon may answer and close before reading it all
            await writer.drain()
        if close_after:
            return b""
        return await asyncio.wait_for(reader.read(), wait_s)
    finally:
        writer.close()


def parse(response: bytes) -> tuple[int, dict[str, str], Any]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body) if body else None


def digests(api: ApiHarness) -> Any:
    return api.db(table_digests)


def is_error_shape(body: Any) -> bool:
    return (isinstance(body, dict) and set(body) == {"error"} and set(body["error"]) == {"code", "message"}
            and isinstance(body["error"]["message"], str))


# -- 500s that were: surrogates, non-ASCII digits, fake gzip, huge numbers --------------------------------------

@pytest.mark.parametrize(("path", "payload", "field"), [
    ("/v1/turns", '{"turn_id": "s1", "user": "\\ud800", "ts": "2026-05-28T20:00:00+08:00"}', "body.user"),
    ("/v1/turns", '{"turn_id": "s1", "companion": "好\\udfff", "ts": "2026-05-28T20:00:00+08:00"}', "body.companion"),
    ("/v1/context", '{"query": "芝麻\\ud83d"}', "body.query"),
])
async def test_lone_surrogate_is_400_naming_the_field_and_changes_nothing(api: ApiHarness, path: str, payload: str,
                                                                         field: str) -> None:
    before = await digests(api)
    status, body = await api.call("POST", path, raw=payload.encode(), headers=JSON_HEADERS)
    assert status == 400 and is_error_shape(body) and field in body["error"]["message"]
    assert await digests(api) == before


@pytest.mark.parametrize("query", ["limit=²", "limit=٣", "limit=１２", "since=１２３", "limit=00001"])
async def test_non_ascii_digits_in_life_are_400(api: ApiHarness, query: str) -> None:
    status, body = await api.call("GET", f"/v1/life?{query}")
    assert status == 400 and is_error_shape(body)
    assert ("limit" if query.startswith("limit") else "since") in body["error"]["message"]


async def test_fake_gzip_body_is_415_and_changes_nothing(api: ApiHarness) -> None:
    before = await digests(api)
    status, body = await api.call("POST", "/v1/turns", raw=b"\x1f\x8bnot really gzip",
                                  headers={**JSON_HEADERS, "Content-Encoding": "gzip"})
    assert status == 415 and body["error"]["code"] == "unsupported_media_type"
    assert await digests(api) == before


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "application/json; charset=latin-1", "application/octet-stream"])
async def test_body_that_is_not_declared_json_is_415(api: ApiHarness, content_type: str) -> None:
    before = await digests(api)
    status, body = await api.call("POST", "/v1/turns", raw=json.dumps(turn("c1", "你好", "嗨")).encode(),
                                  headers={"Content-Type": content_type})
    assert status == 415 and body["error"]["code"] == "unsupported_media_type"
    assert await digests(api) == before
    ok, _ = await api.call("POST", "/v1/turns", raw=json.dumps(turn("c1", "你好", "嗨")).encode(),
                           headers={"Content-Type": "application/json; charset=UTF-8"})
    assert ok == 200


async def test_body_without_content_type_is_415(api: ApiHarness) -> None:
    data = json.dumps(turn("c2", "你好", "嗨")).encode()
    status, _, body = parse(await raw(api.socket_path, b"POST /v1/turns HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
                                      b"Content-Length: %d\r\n\r\n" % len(data) + data))
    assert status == 415 and is_error_shape(body)


async def test_infinite_number_is_400(api: ApiHarness) -> None:
    status, body = await api.call("POST", "/v1/context", raw=b'{"query": "x", "budget_chars": 1e999}',
                                  headers=JSON_HEADERS)
    assert status == 400 and "out of range" in body["error"]["message"]


# -- parser errors: JSON shape, no bytes echoed or logged -------------------------------------------------------

C = CANARY.encode()
MALFORMED = [
    b"GARBAGE " + C + b"\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header " + C + b"\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nX-A: " + C + b"a" * 9000 + b"\r\n\r\n",
    b"POST /v1/turns HTTP/1.1\r\nContent-Length: " + C + b"\r\n\r\n",
    b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nZZ\r\n"
    + C + b"\r\n0\r\n\r\n",
    b"GET /v1/health?x=" + C + b" HTTP/9.9\r\n\r\n",
    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + C,
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + C,
    b"GET /\x00" + C + b" HTTP/1.1\r\n\r\n",
    b"POST /v1/turns HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + C,
    b"POST /v1/turns HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n" + C,
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: a\r\n" % i for i in range(200)) + b"\r\n",
]


async def test_parser_errors_answer_the_error_shape_and_never_log_request_bytes(
        api: ApiHarness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    before = await digests(api)
    for data in MALFORMED:
        response = await raw(api.socket_path, data)
        status, headers, body = parse(response)
        assert 400 <= status < 500 and headers["content-type"].startswith("application/json"), data[:40]
        assert is_error_shape(body) and C not in response
    assert await digests(api) == before
    assert CANARY not in api.log.text()
    assert all(CANARY not in record.getMessage() and not record.exc_info for record in caplog.records)
    status, _ = await api.call("GET", "/v1/health")
    assert status == 200


# -- slow, silent and vanishing clients -------------------------------------------------------------------------

async def test_silent_connection_is_closed_after_the_head_timeout(api: ApiHarness) -> None:
    reader, writer = await asyncio.open_unix_connection(api.socket_path)
    try:
        writer.write(b"GET /v1/health HTTP/1.1\r\nHost: a\r\n")  # a head that never ends (slowloris)
        assert await asyncio.wait_for(reader.read(), 10) == b""
    finally:
        writer.close()


async def test_idle_keep_alive_connection_is_closed_after_the_keepalive_timeout(tmp_path: Path) -> None:
    harness = await ApiHarness(tmp_path, api=ApiSettings(keepalive_timeout_s=0.5)).start()
    try:
        reader, writer = await asyncio.open_unix_connection(harness.socket_path)
        writer.write(b"GET /v1/health HTTP/1.1\r\nHost: a\r\n\r\n")  # keep-alive: the daemon may hold it
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 10)  # returns only once the daemon closes the idle connection
        assert data.startswith(b"HTTP/1.1 200")
        writer.close()
    finally:
        await harness.stop()


async def test_slow_body_is_408_and_changes_nothing(api: ApiHarness) -> None:
    before = await digests(api)
    head = b"POST /v1/turns HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n"
    status, _, body = parse(await raw(api.socket_path, head + b'{"turn_id": "slow", "user": "'))
    assert status == 408 and body["error"]["code"] == "request_timeout"
    assert await digests(api) == before


async def test_client_disconnect_is_info_not_a_500(tmp_path: Path) -> None:
    harness = await ApiHarness(tmp_path, api=ApiSettings(body_timeout_s=30)).start()
    try:
        head = b"POST /v1/turns HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n"
        await raw(harness.socket_path, head + b'{"turn_id": "gone"', close_after=True)
        for _ in range(200):
            if harness.log.named("api.client_disconnected"):
                break
            await asyncio.sleep(0.01)
        assert harness.log.named("api.client_disconnected")
        assert not harness.log.named("api.failed")
        assert all(level != "error" for level, _, _ in harness.log.events)
    finally:
        await harness.stop()


# -- connection limits ------------------------------------------------------------------------------------------

async def test_idle_connections_past_the_limit_do_not_starve_health(tmp_path: Path) -> None:
    harness = await ApiHarness(tmp_path, api=ApiSettings(max_connections=8)).start()
    idle = []
    try:
        for _ in range(30):
            idle.append(await asyncio.open_unix_connection(harness.socket_path))
        await asyncio.sleep(0)
        status, body = await harness.call("GET", "/v1/health")
        assert status == 200 and body["alive"] is True
        gate = harness.component.gates[0]
        assert gate.evicted >= 30 - 8 and gate.live <= 8
        # An evicted client is answered, not reset (issue 25): a request it sends now meets the 503.
        answers = []
        for reader, writer in idle[:gate.evicted]:
            writer.write(b"GET /v1/health HTTP/1.1\r\nHost: a\r\n\r\n")
            answers.append(await asyncio.wait_for(reader.read(), 10))
        assert answers and all(a.startswith(b"HTTP/1.1 503") for a in answers)
    finally:
        for _, writer in idle:
            writer.close()
        await harness.stop()


async def test_busy_connections_at_the_limit_shed_newcomers_with_a_json_503(tmp_path: Path) -> None:
    harness = await ApiHarness(tmp_path, api=ApiSettings(max_connections=8, body_timeout_s=30)).start()
    busy = []
    head = b"POST /v1/turns HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    try:
        gate = harness.component.gates[0]
        for _ in range(8):  # each holds a request in progress: waiting for the rest of its body
            reader, writer = await asyncio.open_unix_connection(harness.socket_path)
            writer.write(head)
            await writer.drain()
            busy.append(writer)
        for _ in range(200):
            if sum(1 for h in gate.server.connections if getattr(h, "_request_in_progress", False)) == 8:
                break
            await asyncio.sleep(0.01)
        in_progress = sum(1 for h in gate.server.connections if getattr(h, "_request_in_progress", False))
        assert in_progress == 8 and gate.live == 8
        reader, writer = await asyncio.open_unix_connection(harness.socket_path)
        try:  # the 503 is written at accept, before the newcomer's request is read
            status, _, body = parse(await asyncio.wait_for(reader.read(), 10))
        finally:
            writer.close()
        assert status == 503 and body["error"]["code"] == "unavailable"
        assert [kw["count"] for kw in harness.log.named("api.connection_shed")] == [1]
    finally:
        for writer in busy:
            writer.close()
        await harness.stop()


def test_repeated_failures_log_once_per_interval_with_a_count() -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def warning(self, event: str, **kw: Any) -> None:
            events.append((event, kw))

    now = [100.0]
    limited = RateLimitedLog(Log(), "api.accept_failed", 10.0, clock=lambda: now[0])
    for _ in range(5000):
        limited.hit(errno="EMFILE")
    now[0] += 10.0
    limited.hit(errno="EMFILE")
    limited.hit(errno="EMFILE")
    limited.flush()
    assert [kw["count"] for _, kw in events] == [1, 5000, 1] and limited.total == 5002


def test_connection_limit_keeps_a_reserve_below_the_fd_limit() -> None:
    assert connection_limit(256, 64, soft_nofile=1024, open_fds=40) == 256
    assert connection_limit(4096, 64, soft_nofile=1024, open_fds=40) == 1024 - 40 - 64
    assert connection_limit(256, 64, soft_nofile=100, open_fds=60) == 8


# -- privacy scan: no oracle -------------------------------------------------------------------------------------

async def test_caller_sending_her_secret_learns_nothing(api: ApiHarness) -> None:
    await api.db(lambda c: add_life_event(c, SECRET, T0 - 600, told=False, origin="life", kind="completed"))
    secret_status, secret_body = await api.call("POST", "/v1/context", {"query": SECRET})
    plain_status, _ = await api.call("POST", "/v1/context", {"query": "昨晚给朋友写了一封很长的信"})
    assert secret_status == plain_status == 200 and secret_body["query"] == SECRET
    bad = {"turn_id": "o1", "user": SECRET, "ts": "2026-05-28T20:00:00+08:00", "salience": SECRET}
    status, body = await api.call("POST", "/v1/turns", bad)  # the 400 message quotes the caller's value
    assert status == 400 and body["error"]["code"] == "bad_request"
    assert not api.log.named("privacy.blocked")


def test_the_scan_still_catches_what_the_caller_did_not_send() -> None:
    index = privacy.UntoldIndex((1,), [(7, privacy._escaped(SECRET)), (7, privacy._escaped(SECRET[:16]))])
    _, hits = privacy.find_leaks({"text": f"前情：{SECRET}"}, index, sent=(SECRET[:16],))
    assert hits == [7]  # she gave the head, the whole text came back: a leak
    _, hits = privacy.find_leaks({"query": SECRET}, index, sent=(SECRET,))
    assert hits == []
    _, hits = privacy.find_leaks({"query": SECRET}, index, sent=())
    assert hits == [7]


# -- receipts and ts --------------------------------------------------------------------------------------------

async def test_receipt_for_a_turn_never_recorded_is_409_and_stays_untold(tmp_path: Path) -> None:
    generous = ApiSettings(share_min_gap_s=0, share_threshold=0.0, share_min_willingness=0.0)
    harness = await ApiHarness(tmp_path, api=generous).start()
    try:
        event_id = await harness.db(lambda c: add_life_event(c, SECRET, T0 - 600, told=False, origin="life",
                                                             kind="completed"))
        _, offer = await harness.call("POST", "/v1/share", {"turn_id": "r1", "query": "信"})
        path = f"/v1/share/{offer['offer']['share_id']}/receipt"
        before = await digests(harness)
        status, body = await harness.call("POST", path, {"turn_id": "r1"})
        assert status == 409 and "never recorded" in body["error"]["message"]
        assert await digests(harness) == before
        await harness.call("POST", "/v1/turns", turn("r1", "最近怎么样", "还不错"))
        status, _ = await harness.call("POST", path, {"turn_id": "r1"})
        assert status == 200
        told = await harness.db(lambda c: c.execute("SELECT told FROM life_event WHERE id = ?", (event_id,)).fetchone())
        assert told[0] == 1
    finally:
        await harness.stop()


@pytest.mark.parametrize(("ts", "why"), [("1970-01-01T00:00:00Z", "before 2000"),
                                         ("2099-01-01T00:00:00+08:00", "ahead of the daemon's clock")])
async def test_ts_outside_the_window_is_400(api: ApiHarness, ts: str, why: str) -> None:
    before = await digests(api)
    status, body = await api.call("POST", "/v1/turns", turn("w1", "你好", "嗨", ts=ts))
    assert status == 400 and why in body["error"]["message"]
    assert await digests(api) == before
    assert (await api.call("POST", "/v1/turns", turn("w1", "你好", "嗨", ts="2026-05-28T20:00:00+08:00")))[0] == 200


@pytest.mark.parametrize(("ts", "why"), [("2026-05-28T20:00:00", "no UTC offset"), ("1970-01-01T00:00:00Z", "2000"),
                                         ("2099-01-01T00:00:00Z", "ahead"), ("２０２６-05-28T20:00:00Z", "ASCII")])
def test_ingest_follows_the_api_ts_rule_and_names_the_line(tmp_path: Path, ts: str, why: str) -> None:
    good = {"ts": "2026-05-28T20:00:00+08:00", "turn_id": "a", "role": "user", "text": "你好"}
    bad = {**good, "turn_id": "b", "ts": ts}
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in (good, bad)) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"line 2: .*{why}"):
        load_history_turns(path, now=T0)
    with pytest.raises(InputError, match=why):
        parse_client_instant(ts, "ts", T0)


def test_at_the_fd_limit_the_spare_descriptor_lets_one_waiting_client_be_answered_503() -> None:
    """EMFILE on accept(): free the spare fd, accept and answer one client, take the spare back; one log line."""
    client, served = socket.socketpair()
    outcomes: list[Any] = [OSError(errno.EMFILE, "Too many open files"), (served, None), BlockingIOError()]

    class Listener:
        def accept(self) -> Any:
            item = outcomes.pop(0)
            if isinstance(item, BaseException):
                raise item
            return item

    events: list[tuple[str, dict[str, Any]]] = []

    class Log:
        def warning(self, event: str, **kw: Any) -> None:
            events.append((event, kw))

    class Server:
        connections: list[Any] = []

    gate = ConnectionGate(Server(), Listener(), limit=8, header_timeout_s=1.0,  # type: ignore[arg-type]
                          log=Log(), error_log_interval_s=10.0)
    gate._take_spare()
    spare_before = gate._spare
    try:
        gate._on_readable()
        assert client.recv(4096).startswith(b"HTTP/1.1 503")
        assert gate.accept_failed.total == 1 and gate.shed.total == 1 and gate._spare is not None
        assert [name for name, _ in events] == ["api.accept_failed", "api.connection_shed"]
        assert spare_before is not None and not outcomes
    finally:
        client.close()
        if gate._spare is not None:
            os.close(gate._spare)
