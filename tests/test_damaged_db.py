"""Damaged or foreign files are refused with one `anima:` line, exit 2, and left byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import pytest

from engine.errors import DamagedStoreError
from engine.snapshot import export, manifest_path
from engine.store import connect, migrate
from engine.store.connect import check_file, quick_check
from tests.conftest import run_anima, write_config

T0 = 1_780_000_000.0


def _db(path: Path, rows: int = 0) -> Path:
    conn = connect(path)
    migrate(conn, T0)
    if rows:
        conn.execute("CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO filler (body) VALUES (?)", [("x" * 500,) for _ in range(rows)])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _corrupt_pages(path: Path) -> None:
    """Overwrite the middle of the file (table b-tree pages, past the schema page) with random bytes."""
    data = bytearray(path.read_bytes())
    rng = random.Random(7)
    page = 4096
    for number in range(len(data) // page // 2, len(data) // page - 1):
        start = number * page
        data[start + 8:start + page] = bytes(rng.randrange(256) for _ in range(page - 8))
    path.write_bytes(bytes(data))


def _one_line_refusal(result) -> None:
    assert result.code == 2, (result.code, result.err)
    assert result.err.startswith("anima: ") and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err


def _files(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "her.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("this is a note, not a database\n")
    elif kind == "random":
        path.write_bytes(random.Random(1).randbytes(64 * 1024))
    elif kind == "truncated":
        _db(path, rows=400)
        with open(path, "r+b") as handle:
            handle.truncate(path.stat().st_size // 3)
    elif kind == "corrupt_pages":
        _db(path, rows=400)
        _corrupt_pages(path)
    return path


@pytest.mark.parametrize("kind", ["empty", "text", "random", "truncated", "corrupt_pages"])
def test_run_on_a_damaged_or_foreign_file_refuses_with_one_line_and_changes_nothing(tmp_path: Path, kind: str) -> None:
    db = _files(tmp_path, kind)
    before = _sha(db)
    config = write_config(tmp_path / "config.toml")
    result = run_anima("--config", str(config), "--db", str(db), "run", timeout=60)
    _one_line_refusal(result)
    assert _sha(db) == before
    if kind == "empty":
        assert "rm " in result.err  # says how to start fresh instead of silently making a demo companion


@pytest.mark.parametrize("kind", ["empty", "random", "corrupt_pages"])
def test_cli_reader_on_a_damaged_file_gives_one_line(tmp_path: Path, kind: str) -> None:
    db = _files(tmp_path, kind)
    config = write_config(tmp_path / "config.toml")
    result = run_anima("--config", str(config), "--db", str(db), "export", str(tmp_path / "x.db"), timeout=60)
    assert result.code in (1, 2), result.err
    assert result.err.startswith("anima: ") and result.err.count("\n") == 1, result.err


def test_quick_check_names_corrupt_pages(tmp_path: Path) -> None:
    db = _db(tmp_path / "her.db", rows=400)
    _corrupt_pages(db)
    # Which step notices depends on which pages the damage hit: opening (the schema) or the check.
    with pytest.raises(DamagedStoreError, match="quick_check|damaged"):
        conn = connect(db)
        try:
            quick_check(conn, db)
        finally:
            conn.close()


def test_check_file_accepts_a_missing_or_real_database(tmp_path: Path) -> None:
    check_file(tmp_path / "none.db")
    check_file(_db(tmp_path / "ok.db"))
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(DamagedStoreError, match="directory"):
        check_file(tmp_path / "dir.db")


def _snapshot(tmp_path: Path) -> Path:
    snap = tmp_path / "snap.db"
    export(_db(tmp_path / "src.db"), snap, T0)
    return snap


@pytest.mark.parametrize("damage", ["not_json", "a_list", "tables_not_object"])
def test_restore_with_a_broken_manifest_gives_one_line_exit_2(tmp_path: Path, damage: str) -> None:
    snap = _snapshot(tmp_path)
    mpath = manifest_path(snap)
    manifest = json.loads(mpath.read_text())
    mpath.write_text({"not_json": "{\"format\": 1, ", "a_list": "[1, 2]",
                      "tables_not_object": json.dumps({**manifest, "tables": [1]})}[damage])
    target = tmp_path / "target.db"
    config = write_config(tmp_path / "config.toml")
    result = run_anima("--config", str(config), "--db", str(target), "restore", str(snap), timeout=60)
    _one_line_refusal(result)
    assert not target.exists()


def test_restore_of_a_directory_or_random_bytes_gives_one_line_exit_2(tmp_path: Path) -> None:
    snap_dir = tmp_path / "snapdir"
    snap_dir.mkdir()
    (tmp_path / "snapdir.manifest.json").write_text(json.dumps({"format": 1, "tables": {}}))
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(os.urandom(8192))
    (tmp_path / "bogus.db.manifest.json").write_text(json.dumps({"format": 1, "tables": {}, "schema_version": 5}))
    config = write_config(tmp_path / "config.toml")
    for snap in (snap_dir, bogus):
        result = run_anima("--config", str(config), "--db", str(tmp_path / "t.db"), "restore", str(snap), timeout=60)
        _one_line_refusal(result)
    assert not (tmp_path / "t.db").exists()


def test_export_into_a_missing_directory_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    db = _db(tmp_path / "her.db")
    config = write_config(tmp_path / "config.toml")
    target = tmp_path / "nonexistent" / "dir" / "x.db"
    result = run_anima("--config", str(config), "--db", str(db), "export", str(target), timeout=60)
    _one_line_refusal(result)
    assert not (tmp_path / "nonexistent").exists()
