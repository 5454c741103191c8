"""Export/restore (engine.snapshot): consistent copy + manifest, verification, refusals, backups, the daemon's lock."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from engine.errors import InputError, LockedError, StoreError
from engine.memory.ingest import TurnInput, record_turn
from engine.restore import restore
from engine.snapshot import export, manifest_path, table_digests, verify
from engine.store import connect, oplog
from engine.store.core import log_event
from engine.store.life import add_life_event
from engine.store.lock import DaemonLock
from tests.api_support import T0, HashEmbedder, make_database

EMBEDDER = HashEmbedder()


def populate(db: Path, turns: int = 8) -> None:
    make_database(db)
    conn = connect(db)
    try:
        for i in range(turns):
            record_turn(conn, EMBEDDER, TurnInput(f"t{i}", f"第{i}句：我的猫芝麻今天很乖", "真好",
                                                  "2026-05-28T20:00:00+08:00"), T0 + i)
        add_life_event(conn, "早上给薄荷浇了水", T0 - 3600, told=True)
        add_life_event(conn, "偷偷写了一首诗", T0 - 600, told=False)
        conn.execute("INSERT INTO mem_semantic (key, statement, valid_from, recorded_at) VALUES ('pet', '用户养了猫芝麻', ?, ?)",
                     (T0, T0))
        conn.execute("INSERT INTO mem_relational (kind, statement, valid_from, recorded_at) VALUES ('nickname', '叫她小安', ?, ?)",
                     (T0, T0))
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "her.db"
    populate(path)
    return path


def test_export_writes_a_verified_snapshot_and_a_manifest_of_what_is_in_it(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "out" / "snap.db"
    snap.parent.mkdir()  # export never makes directories: a typo must not grow a tree
    manifest = export(db, snap, T0)
    assert json.loads(manifest_path(snap).read_text()) == manifest
    assert manifest["integrity"] == "ok" and manifest["schema_version"] >= 1
    contents = manifest["contents"]
    assert contents["companion"]["name"] == "小安" and contents["companion"]["chart"]["pillars"]
    assert contents["chats"]["turns"] == 8 and contents["memories"]["episodic"] == 16
    assert contents["facts"]["active"] == 1 and contents["relations"]["active"] == 1
    assert contents["life"] == {**contents["life"], "events": 2, "told": 1}
    assert "偷偷写了一首诗" not in manifest_path(snap).read_text()  # counts, never her untold text
    assert manifest["tables"]["chat_message"]["rows"] == 16
    assert any(t.startswith("mem_fts_") for t in manifest["tables"])  # shadow tables are hashed
    assert not Path(str(snap) + "-wal").exists()
    conn = connect(db, readonly=True)
    assert table_digests(conn) == manifest["tables"]  # the copy equals the source, table by table


def test_export_refuses_to_overwrite_or_to_export_onto_itself(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    with pytest.raises(InputError, match="already exists"):
        export(db, snap, T0)
    with pytest.raises(InputError, match="database itself"):
        export(db, db, T0, overwrite=True)


def test_export_during_writes_is_consistent(db: Path, tmp_path: Path) -> None:
    stop = threading.Event()

    def writer() -> None:
        conn = connect(db)
        i = 0
        while not stop.is_set():
            record_turn(conn, EMBEDDER, TurnInput(f"w{i}", f"写入中{i}", "好", "2026-05-28T21:00:00+08:00"), T0 + 100 + i)
            i += 1
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        manifests = [export(db, tmp_path / f"snap{k}.db", T0) for k in range(3)]
    finally:
        stop.set()
        thread.join()
    for k, manifest in enumerate(manifests):
        verify(tmp_path / f"snap{k}.db")
        tables = manifest["tables"]
        # Every message has its memory row, FTS row and vector: no half-written turn in the copy.
        assert tables["chat_message"]["rows"] == tables["mem_episodic"]["rows"]
        assert tables["mem_fts_docsize"]["rows"] == tables["mem_episodic"]["rows"]


def test_restore_into_a_new_path_gives_identical_tables(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    manifest = export(db, snap, T0)
    done = restore(snap, tmp_path / "new" / "her.db", T0)
    assert done["backup"] is None
    conn = connect(tmp_path / "new" / "her.db")
    restored = table_digests(conn)
    # Every table equal, and the event log the snapshot's plus one: the restore itself.
    assert {t: d for t, d in restored.items() if t != "event_log"} == {
        t: d for t, d in manifest["tables"].items() if t != "event_log"}
    assert restored["event_log"]["rows"] == manifest["tables"]["event_log"]["rows"] + 1


def test_restore_is_recorded_in_the_file_and_logged_once_by_the_next_daemon(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    target = tmp_path / "new" / "her.db"
    restore(snap, target, T0 + 60)
    assert sorted(p.name for p in target.parent.iterdir()) == ["her.db", "her.db.lock"]  # no -wal/-shm left
    conn = connect(target)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    last = conn.execute("SELECT kind, detail_json FROM event_log ORDER BY id DESC LIMIT 1").fetchone()
    assert last["kind"] == "restore" and json.loads(last["detail_json"])["actor"] == "cli"
    # The next daemon's start: its log tail begins before the restore, whatever the snapshot's last run did.
    log_event(conn, T0 + 120, "start", pid=1)
    names = [w["name"] for w in oplog.writes_after(conn, oplog.start_cursor(conn))]
    assert names.count("store.restored") == 1


def test_restore_keeps_the_replaced_file_and_its_wal_as_a_backup(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    target = tmp_path / "other.db"
    make_database(target)
    keep = connect(target)  # an open connection leaves -wal/-shm beside the file
    keep.execute("INSERT INTO event_log (ts, kind) VALUES (1, 'marker')")
    before = table_digests(keep)
    done = restore(snap, target, T0 + 3600)
    keep.close()
    backup = Path(done["backup"])
    assert backup.name == "other.db.bak-20260528T212640Z"
    assert not Path(str(target) + "-wal").exists() or Path(str(backup) + "-wal").exists()
    old = connect(backup)
    assert table_digests(old) == before


def test_restore_refuses_a_running_daemons_file(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    lock = DaemonLock(db)
    lock.acquire()
    try:
        original = db.read_bytes()
        with pytest.raises(LockedError, match="running anima daemon"):
            restore(snap, db, T0)
        assert db.read_bytes() == original
        assert not list(tmp_path.glob("her.db.bak-*"))
    finally:
        lock.release()


def test_restore_refuses_a_snapshot_changed_after_export(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    raw = sqlite3.connect(snap)
    raw.execute("UPDATE mem_episodic SET salience = 0.01 WHERE id = 1")
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match="file hash differs"):
        restore(snap, tmp_path / "t.db", T0)
    manifest = json.loads(manifest_path(snap).read_text())
    manifest.pop("file_sha256")
    manifest_path(snap).write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="table mem_episodic does not match"):
        restore(snap, tmp_path / "t.db", T0)
    assert not (tmp_path / "t.db").exists()


def test_restore_refuses_a_newer_schema(db: Path, tmp_path: Path) -> None:
    conn = connect(db)
    conn.execute("INSERT INTO schema_migrations VALUES (9999, 'future', 0)")
    conn.close()
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    with pytest.raises(StoreError, match="newer than this anima"):
        restore(snap, tmp_path / "t.db", T0)


def test_restore_refuses_a_damaged_file(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    data = bytearray(snap.read_bytes())
    data[8192:8192 + 512] = b"\x00" * 512
    snap.write_bytes(bytes(data))
    with pytest.raises(StoreError):
        restore(snap, tmp_path / "t.db", T0)


def test_restore_needs_the_manifest(db: Path, tmp_path: Path) -> None:
    snap = tmp_path / "snap.db"
    export(db, snap, T0)
    manifest_path(snap).unlink()
    with pytest.raises(InputError, match="manifest"):
        restore(snap, tmp_path / "t.db", T0)


def test_cli_export_and_restore(db: Path, tmp_path: Path) -> None:
    from daemon.cli import main

    snap = tmp_path / "cli.db"
    assert main(["--db", str(db), "export", str(snap), "--json"]) == 0
    assert main(["--db", str(db), "restore", str(snap), "--db", str(tmp_path / "r.db")]) == 0
    assert (tmp_path / "r.db").exists() and not list(tmp_path.glob("her.db.bak-*"))
    lock = DaemonLock(db)
    lock.acquire()
    try:
        assert main(["--db", str(db), "restore", str(snap)]) == 2
    finally:
        lock.release()


