"""Defect 4 of issue 25: restore accepts only the schema objects anima's own migrations make, and doctor flags others.

A snapshot with a trigger that copies forgotten text into a hidden table (or that marks untold life as
told) passed every table hash, because the manifest was made from the same poisoned file; restore now
compares sqlite_master with what the migrations up to the file's schema version create.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.snapshot import export, restore
from engine.store import connect, migrate
from engine.store.schema import foreign_objects
from tests.api_support import T0
from tests.conftest import run_anima
from tests.test_snapshot import populate

FOREIGN = {
    "a trigger keeping forgotten text in a hidden table": (
        "CREATE TABLE kept (text TEXT);"
        "CREATE TRIGGER keep_text BEFORE DELETE ON chat_message BEGIN INSERT INTO kept VALUES (old.text); END;",
        ["table kept", "trigger keep_text"]),
    "a trigger telling her untold life": (
        "CREATE TRIGGER tell_all AFTER INSERT ON life_event BEGIN UPDATE life_event SET told = 1 "
        "WHERE id = new.id; END;", ["trigger tell_all"]),
    "a view": ("CREATE VIEW everything AS SELECT text FROM chat_message;", ["view everything"]),
    "a changed trigger": (
        "DROP TRIGGER chat_message_no_delete;"
        "CREATE TRIGGER chat_message_no_delete BEFORE DELETE ON chat_message BEGIN SELECT 1; END;",
        ["trigger chat_message_no_delete (changed)"]),
    "a dropped index": ("DROP INDEX chat_message_ts;", ["index chat_message_ts (missing)"]),
    "a table named like a shadow table": ("CREATE TABLE mem_fts_kept (text TEXT);", ["table mem_fts_kept"]),
}


def poisoned(tmp_path: Path, sql: str) -> Path:
    db = tmp_path / "her.db"
    populate(db)
    conn = connect(db)
    conn.executescript(sql)
    conn.close()
    return db


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_foreign_objects_names_each_object_the_migrations_do_not_make(case: str, tmp_path: Path) -> None:
    sql, names = FOREIGN[case]
    conn = connect(poisoned(tmp_path, sql), readonly=True)
    assert foreign_objects(conn) == names
    conn.close()


def test_a_clean_file_has_no_foreign_objects_whatever_version_it_was_made_at(tmp_path: Path) -> None:
    fresh = tmp_path / "her.db"
    populate(fresh)
    old = connect(tmp_path / "old.db")
    migrate(old, T0, upto=8)
    assert foreign_objects(old) == []  # at version 8: what the migrations up to 8 make
    migrate(old, T0)
    old.execute("PRAGMA optimize")  # SQLite's own sqlite_stat1 is not foreign
    assert foreign_objects(old) == []
    old.close()
    conn = connect(fresh, readonly=True)
    assert foreign_objects(conn) == []
    conn.close()


def test_restore_refuses_a_snapshot_with_a_hidden_trigger_in_one_line_exit_2(tmp_path: Path) -> None:
    db = poisoned(tmp_path, FOREIGN["a trigger keeping forgotten text in a hidden table"][0])
    snap = tmp_path / "poisoned.snapshot"
    export(db, snap, T0)  # its manifest agrees with it: the hashes alone cannot tell
    target = tmp_path / "target.db"
    populate(target)
    before = target.read_bytes()
    with pytest.raises(InputError, match="trigger keep_text"):
        restore(snap, target, T0)
    done = run_anima("restore", str(snap), "--db", str(target))
    assert done.code == 2 and len(done.err.strip().splitlines()) == 1
    assert "table kept" in done.err and "trigger keep_text" in done.err
    assert target.read_bytes() == before and not list(tmp_path.glob("target.db.bak-*"))


def test_doctor_fails_a_file_with_foreign_objects_and_passes_a_clean_one(tmp_path: Path) -> None:
    clean = tmp_path / "clean" / "her.db"
    clean.parent.mkdir()
    populate(clean)
    done = run_anima("--db", str(clean), "doctor", "--json")
    check = next(c for c in json.loads(done.out)["checks"] if c["check"] == "schema objects")
    assert check["status"] == "ok"
    bad = poisoned(tmp_path, FOREIGN["a trigger telling her untold life"][0])
    done = run_anima("--db", str(bad), "doctor", "--json")
    check = next(c for c in json.loads(done.out)["checks"] if c["check"] == "schema objects")
    assert check["status"] == "fail" and "trigger tell_all" in check["detail"] and done.code == 1
