"""engine/store/schema.sql is the current schema: the migrations produce it, and it builds the same database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.store import connect, migrate, schema

ROOT = Path(__file__).resolve().parent.parent


def test_schema_sql_is_what_the_migrations_produce() -> None:
    assert schema.schema_path().read_text(encoding="utf-8") == schema.migrated_render(), (
        "engine/store/schema.sql is out of date: run python -m engine.store.schema --write")


def test_schema_sql_builds_the_same_objects_as_the_migrations(tmp_path: Path) -> None:
    migrated, built = connect(tmp_path / "migrated.db"), connect(tmp_path / "built.db")
    try:
        migrate(migrated, now=0)
        schema.apply(built, schema.schema_path().read_text(encoding="utf-8"))
        assert schema.normalised(built) == schema.normalised(migrated)
        # Shadow tables are left out of the file, yet the built database has the same ones.
        tables = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        assert [r[0] for r in built.execute(tables)] == [r[0] for r in migrated.execute(tables)]
    finally:
        migrated.close()
        built.close()


def test_normalising_ignores_comments_and_layout_but_not_content() -> None:
    a = "CREATE TABLE t (\n  x INTEGER, -- the x\n  y TEXT\n)"
    assert schema.normalise_sql(a) == schema.normalise_sql("CREATE TABLE t (x INTEGER,y TEXT)")
    assert schema.normalise_sql(a) != schema.normalise_sql("CREATE TABLE t (x INTEGER, y BLOB)")


def test_check_fails_on_a_stale_file_and_write_repairs_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "schema.sql"
    stale.write_text("-- old\n", encoding="utf-8")
    monkeypatch.setattr(schema, "schema_path", lambda: stale)
    assert schema.main(["--check"]) == 1
    assert schema.main(["--write"]) == 0 and schema.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == schema.migrated_render()


@pytest.mark.e2e
def test_the_module_runs_as_a_command() -> None:
    done = subprocess.run([sys.executable, "-m", "engine.store.schema", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
