"""One file, one daemon: the lock follows the file through symlinks, refuses hard links, and restore obeys it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.errors import LockedError
from engine.restore import restore
from engine.snapshot import export
from engine.store import connect, migrate
from engine.store.lock import DaemonLock, is_locked, lock_path
from tests.conftest import run_anima, write_config

T0 = 1_780_000_000.0


def _db(path: Path) -> Path:
    conn = connect(path)
    migrate(conn, T0)
    conn.close()
    return path


def test_lock_taken_through_a_symlink_is_the_lock_of_the_file(tmp_path: Path) -> None:
    real = _db(tmp_path / "a.db")
    link = tmp_path / "link.db"
    link.symlink_to(real)
    held = DaemonLock(real)
    held.acquire()
    try:
        with pytest.raises(LockedError, match="already used"):
            DaemonLock(link).acquire()
        assert lock_path(link) == lock_path(real)
        assert is_locked(link)
    finally:
        held.release()
    second = DaemonLock(link)
    second.acquire()  # free again once released
    second.release()


def test_a_database_file_with_a_second_hard_link_is_refused(tmp_path: Path) -> None:
    real = _db(tmp_path / "a.db")
    os.link(real, tmp_path / "b.db")
    for name in ("a.db", "b.db"):
        with pytest.raises(LockedError, match="2 hard links"):
            DaemonLock(tmp_path / name).acquire()


def test_restore_through_a_symlink_while_the_daemon_holds_the_file_is_refused(tmp_path: Path) -> None:
    real = _db(tmp_path / "a.db")
    snap = tmp_path / "snap.db"
    export(real, snap, T0)
    link = tmp_path / "link.db"
    link.symlink_to(real)
    before = real.read_bytes()
    held = DaemonLock(real)
    held.acquire()
    try:
        with pytest.raises(LockedError, match="in use by a running anima daemon"):
            restore(snap, link, T0)
    finally:
        held.release()
    assert real.read_bytes() == before


def test_restore_through_a_symlink_replaces_the_file_it_points_at(tmp_path: Path) -> None:
    real = _db(tmp_path / "a.db")
    snap = tmp_path / "snap.db"
    export(real, snap, T0)
    link = tmp_path / "link.db"
    link.symlink_to(real)
    done = restore(snap, link, T0 + 60)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert done["target"] == str(real.resolve())
    assert done["backup"] is not None and Path(done["backup"]).parent == real.parent


def test_restore_or_a_cli_writer_through_a_hard_link_is_refused(tmp_path: Path) -> None:
    real = _db(tmp_path / "a.db")
    snap = tmp_path / "snap.db"
    export(real, snap, T0)
    os.link(real, tmp_path / "hard.db")
    before = real.read_bytes()
    with pytest.raises(LockedError, match="hard links"):
        restore(snap, tmp_path / "hard.db", T0)
    assert real.read_bytes() == before and (tmp_path / "hard.db").stat().st_ino == real.stat().st_ino
    config = write_config(tmp_path / "config.toml")
    result = run_anima("--config", str(config), "--db", str(tmp_path / "hard.db"), "control", "set",
                       "memory_hybrid", "off", timeout=60)
    assert result.code == 2 and "hard links" in result.err and result.err.count("\n") == 1, result.err


@pytest.mark.e2e
def test_second_daemon_through_a_symlink_or_a_hard_link_exits_2(tmp_path: Path, start_daemon) -> None:
    real = tmp_path / "a.db"
    config = write_config(tmp_path / "config.toml")
    first = start_daemon(real, config=config)
    link = tmp_path / "link.db"
    link.symlink_to(real)
    second = run_anima("--config", str(config), "--db", str(link), "run", timeout=60)
    assert second.code == 2, second.err
    assert f"(pid {first.proc.pid})" in second.err and second.err.count("\n") == 1
    os.link(real, tmp_path / "hard.db")
    third = run_anima("--config", str(config), "--db", str(tmp_path / "hard.db"), "run", timeout=60)
    assert third.code == 2, third.err
    assert "hard links" in third.err and third.err.count("\n") == 1
    started = time.monotonic()
    assert first.stop() == 0
    assert time.monotonic() - started < 10
