"""Defect 9 of issue 25: what an operator gets wrong is one line on stderr and exit 2 (systemd's
RestartPreventExitStatus=2 then stops retrying), never a traceback, a hang or a read of /dev/zero.

Every case runs the real `anima` command in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.snapshot import export, manifest_path
from engine.store import connect
from tests.api_support import T0
from tests.conftest import CliResult, run_anima, write_config
from tests.test_snapshot import populate


def one_line_exit_2(done: CliResult, needle: str) -> None:
    assert done.code == 2, done.err[-2000:]
    assert "Traceback" not in done.err
    last = done.err.strip().splitlines()[-1]
    assert last.startswith("anima: ") and needle in last, last


@pytest.fixture
def her(tmp_path: Path) -> Path:
    db = tmp_path / "her.db"
    populate(db)
    return db


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs holding a database, remounted read-only (root only; skipped with the reason otherwise)."""
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip() or 'not root'})")
    try:
        populate(mount / "her.db")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True, capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.parametrize(("config_text", "needle"), [
    ("x = " + "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[heartbeat]\ninterval_s = inf\n", "interval_s must be a finite number"),
])
def test_bad_config_values_are_one_line_exit_2(config_text: str, needle: str, her: Path, tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(config_text, encoding="utf-8")
    one_line_exit_2(run_anima("--config", str(config), "--db", str(her), "run", timeout=60), needle)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_a_config_that_is_not_a_regular_file_is_refused_before_reading(kind: str, her: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    if kind == "dev-zero":
        config.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(config)
    else:
        config.mkdir()
    one_line_exit_2(run_anima("--config", str(config), "--db", str(her), "status", timeout=30),
                    "not a regular file")


def test_an_uncreatable_socket_directory_is_one_line_exit_2(her: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    config = write_config(tmp_path / "config.toml", extra=f'[api]\nsocket_path = "{blocker}/sub/anima.sock"\n')
    one_line_exit_2(run_anima("--config", str(config), "--db", str(her), "run", timeout=120),
                    "cannot create the socket's directory")


def test_a_database_on_a_read_only_filesystem_is_one_line_exit_2(read_only_folder: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml")
    for name in ("her.db", "new.db"):
        one_line_exit_2(run_anima("--config", str(config), "--db", str(read_only_folder / name), "run", timeout=60),
                        "Read-only file system")
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["her.db"]


def test_export_to_a_read_only_destination_is_one_line_exit_2(her: Path, read_only_folder: Path) -> None:
    done = run_anima("--db", str(her), "export", str(read_only_folder / "her.snapshot"))
    one_line_exit_2(done, "Read-only file system")
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["her.db"]


def test_a_newer_schema_is_one_line_exit_2(her: Path, tmp_path: Path) -> None:
    conn = connect(her)
    conn.execute("INSERT INTO schema_migrations VALUES (9999, 'future', 0)")
    conn.close()
    before = her.read_bytes()
    done = run_anima("--config", str(write_config(tmp_path / "config.toml")), "--db", str(her), "run", timeout=60)
    one_line_exit_2(done, "newer than this anima understands")
    assert her.read_bytes() == before


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_restore_manifest_that_is_not_a_regular_file_is_refused_at_once(kind: str, her: Path, tmp_path: Path) -> None:
    snap = tmp_path / "her.snapshot"
    export(her, snap, T0)
    manifest_path(snap).unlink()
    if kind == "dev-zero":
        manifest_path(snap).symlink_to("/dev/zero")
    else:
        os.mkfifo(manifest_path(snap))
    done = run_anima("restore", str(snap), "--db", str(tmp_path / "target.db"), timeout=30)
    one_line_exit_2(done, "not a regular file")
    assert not (tmp_path / "target.db").exists()


def test_a_huge_sparse_snapshot_is_refused_without_being_hashed(her: Path, tmp_path: Path) -> None:
    snap = tmp_path / "her.snapshot"
    manifest = export(her, snap, T0)
    huge = 20 << 30
    with open(snap, "r+b") as handle:
        handle.truncate(huge)
        page_size = int.from_bytes(handle.read(18)[16:18], "big")
        handle.seek(28)  # the header's page count: the file's size, so only the holes give it away
        handle.write((huge // page_size).to_bytes(4, "big"))
    manifest["file_bytes"] = huge
    manifest_path(snap).write_text(json.dumps(manifest), encoding="utf-8")
    started = time.monotonic()
    done = run_anima("restore", str(snap), "--db", str(tmp_path / "target.db"), timeout=60)
    one_line_exit_2(done, "sparse file")
    assert time.monotonic() - started < 30  # hashing 20 GB of holes took minutes
    assert not (tmp_path / "target.db").exists()


def test_a_snapshot_of_another_size_than_its_manifest_is_refused_before_hashing(her: Path, tmp_path: Path) -> None:
    snap = tmp_path / "her.snapshot"
    export(her, snap, T0)
    with open(snap, "ab") as handle:
        handle.write(b"\0" * 4096)
    done = run_anima("restore", str(snap), "--db", str(tmp_path / "target.db"), timeout=60)
    assert done.code != 0 and "Traceback" not in done.err and "bytes" in done.err
    shutil.rmtree(tmp_path / "target.db", ignore_errors=True)
