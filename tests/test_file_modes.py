"""Files hold her chats: DB, WAL, SHM and snapshots are 0640 whatever the umask; restore keeps owner and mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine.restore import restore
from engine.snapshot import export, manifest_path
from engine.store import connect, migrate
from engine.store.lock import lock_path

T0 = 1_780_000_000.0


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_database_wal_shm_and_snapshot_are_not_world_readable_under_umask_022(tmp_path: Path, open_umask) -> None:
    db = tmp_path / "her.db"
    conn = connect(db)
    migrate(conn, T0)
    for side in ("", "-wal", "-shm"):
        assert _mode(Path(f"{db}{side}")) == 0o640, side
    conn.close()
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    assert _mode(snap) == 0o640
    assert _mode(manifest_path(snap)) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="restoring as root onto another user's file needs root")
def test_root_restore_keeps_the_owner_and_mode_of_the_file_it_replaces(tmp_path: Path, open_umask) -> None:
    tmp_path.chmod(0o755)
    service_uid, service_gid = 4242, 4243
    db = tmp_path / "her.db"
    conn = connect(db)
    migrate(conn, T0)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    os.chown(db, service_uid, service_gid)
    db.chmod(0o600)
    os.chown(tmp_path, service_uid, service_gid)
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    restore(snap, db, T0 + 60)
    st = db.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (service_uid, service_gid, 0o600)
    lock = lock_path(db).stat()
    assert (lock.st_uid, lock.st_gid) == (service_uid, service_gid)  # the service user can take it next
    for side in ("-wal", "-shm"):
        assert not Path(f"{db}{side}").exists()  # restore's own check leaves no root-owned side files
