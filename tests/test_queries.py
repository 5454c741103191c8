"""Every named query is findable, described and valid: each `q("…")` name in the code exists, every query
prepares (EXPLAIN) against the migrated schema, and each `-- name:` has a description line under it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from engine.store import connect, migrate
from engine.store.queries import all_queries

ROOT = Path(__file__).resolve().parent.parent
CODE = ("engine", "daemon", "bench")
QUERY_FILES = sorted(e.name for e in (resources.files("engine.store") / "queries").iterdir() if e.name.endswith(".sql"))
# Queries that prepare only in a state the code makes first: run these queries before (then roll back).
PRECONDITIONS = {"mem_term_doc_count": ["mem_create_vocab"], "mem_terms_doc_counts": ["mem_create_vocab"],
                 "mem_create_mem_vec": ["mem_drop_mem_vec"]}
# The formatted queries: {dim} is the model's dimension; a snapshot hashes each table by its quoted name and key.
TEMPLATED = {"mem_create_mem_vec": {"dim": 384}, "snapshot_table_rows": {"table": '"job"', "order_by": '"id"'}}
# Being edited by other work right now; the lead describes them after merging (then drop them from here).
UNDESCRIBED_FOR_NOW: set[str] = set()


def python_files() -> Iterator[Path]:
    for top in CODE:
        yield from sorted((ROOT / top).rglob("*.py"))


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def query_names_used() -> dict[str, set[str]]:
    """Query name -> files calling q() with it. A computed name (q(TABLE.get(x, "default"))) counts every
    string in the expression and in the module-level value of each name it reads."""
    used: dict[str, set[str]] = {}
    for path in python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        top_level = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                     for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "q"
                    and len(node.args) == 1):
                continue
            arg = node.args[0]
            names = _strings(arg)
            for ref in (n.id for n in ast.walk(arg) if isinstance(n, ast.Name)):
                if ref in top_level:
                    names |= _strings(top_level[ref])
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            assert names, f"{where}: cannot tell which query q() asks for; name it with a string"
            for name in names:
                used.setdefault(name, set()).add(where)
    return used


class AnyParams(dict[str, Any]):
    """Every named parameter is bound (to NULL): EXPLAIN needs values bound, not meaningful ones."""

    def __missing__(self, key: str) -> None:
        return None


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    conn = connect(tmp_path_factory.mktemp("queries") / "queries.db")
    migrate(conn, now=0)
    conn.text_factory = bytes  # EXPLAIN's p4 column holds binary operands
    yield conn
    conn.close()


def test_every_query_name_in_the_code_exists() -> None:
    used = query_names_used()
    assert len(used) > 100  # the scan found the code's queries (there are ~200)
    missing = {name: sorted(where) for name, where in used.items() if name not in all_queries()}
    assert not missing, f"q() names with no query in engine/store/queries/*.sql: {missing}"


def test_every_query_is_used_by_some_code() -> None:
    unused = sorted(set(all_queries()) - set(query_names_used()))
    assert not unused, f"queries no code calls (delete them or use them): {unused}"


@pytest.mark.parametrize("name", sorted(all_queries()))
def test_every_query_prepares_against_the_migrated_schema(migrated: Any, name: str) -> None:
    sql = all_queries()[name]
    if name in TEMPLATED:
        sql = sql.format(**TEMPLATED[name])
    migrated.execute("BEGIN")
    try:
        for before in PRECONDITIONS.get(name, []):
            migrated.execute(all_queries()[before], AnyParams())
        migrated.execute("EXPLAIN " + sql, AnyParams()).fetchall()
    finally:
        migrated.execute("ROLLBACK")


def test_explain_does_catch_a_query_the_schema_cannot_run(migrated: Any) -> None:
    with pytest.raises(Exception, match="no such column"):
        migrated.execute("EXPLAIN SELECT no_such_column FROM job", AnyParams()).fetchall()


def _undescribed(text: str) -> list[str]:
    lines = text.splitlines()
    missing = []
    for i, line in enumerate(lines):
        match = re.match(r"^--\s*name:\s*(\w+)\s*$", line)
        if match:
            below = lines[i + 1] if i + 1 < len(lines) else ""
            if not below.startswith("--") or re.match(r"^--\s*name:", below):
                missing.append(match.group(1))
    return missing


@pytest.mark.parametrize("filename", [
    pytest.param(f, marks=pytest.mark.xfail(strict=True, reason="other work edits it now; described after the merge"))
    if f in UNDESCRIBED_FOR_NOW else f for f in QUERY_FILES])
def test_every_query_has_a_description_line(filename: str) -> None:
    text = (resources.files("engine.store") / "queries" / filename).read_text(encoding="utf-8")
    missing = _undescribed(text)
    assert not missing, f"{filename}: add a one-line '-- what it does' under -- name: of {missing}"


def test_the_description_check_sees_a_bare_query() -> None:
    assert _undescribed("-- name: a\n-- Does a.\nSELECT 1\n\n-- name: b\nSELECT 2\n-- name: c\n-- name: d\n-- D.") \
        == ["b", "c"]
