"""The layers hold: engine never imports daemon; only engine/store calls q(); routes import no engine.store;
jobs are dispatched only by the registry.

Rules not yet true are xfail(strict=True) with their offenders in the failure message (pytest -rx shows
it): the day the last offender goes, the test passes, strict turns that into a failure, and the xfail
mark is deleted so the rule is enforced from then on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


Sources = Iterable[tuple[str, ast.Module]]


@cache
def _parsed(folder: str) -> tuple[tuple[str, ast.Module], ...]:
    return tuple((str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
                 for path in sorted((ROOT / folder).rglob("*.py")))


def sources(*folders: str) -> Iterator[tuple[str, ast.Module]]:
    for folder in folders:
        yield from _parsed(folder)


def imported_modules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every module a file imports, by statement or by importlib.import_module("…") / __import__("…")."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            for alias in node.names:  # `from engine import store` imports engine.store
                yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("import_module", "__import__"):
                yield node.lineno, node.args[0].value


def _is(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _imports_of(files: Sources, package: str) -> list[str]:
    """`file:line imports module` for each import statement reaching `package` (one entry per statement)."""
    found: dict[str, str] = {}
    for where, tree in files:
        for line, module in imported_modules(tree):
            if _is(module, package):
                found.setdefault(f"{where}:{line}", module)
    return [f"{at} imports {module}" for at, module in found.items()]


def engine_imports_of_daemon(files: Sources | None = None) -> list[str]:
    return _imports_of(files or sources("engine"), "daemon")


def q_calls_outside_store(files: Sources | None = None) -> list[str]:
    found = []
    for where, tree in files or sources("engine", "daemon"):
        if where.startswith("engine/store/"):
            continue
        lines = sorted({node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                        and isinstance(node.func, ast.Name) and node.func.id == "q"})
        if lines:
            found.append(f"{where} ({len(lines)} calls, first at line {lines[0]})")
    return found


def route_imports_of_store(files: Sources | None = None) -> list[str]:
    return _imports_of(files or sources("daemon/api/routes"), "engine.store")


def job_kind_dispatch_outside_registry(files: Sources | None = None) -> list[str]:
    """`job.kind == …` comparisons (the old `if job.kind == JOB_KIND` dispatch) anywhere but the registry."""
    found = []
    for where, tree in files or sources("engine", "daemon"):
        if where == "engine/jobs/registry.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    if isinstance(side, ast.Attribute) and side.attr == "kind" and isinstance(side.value, ast.Name) \
                            and "job" in side.value.id.lower():
                        found.append(f"{where}:{node.lineno}")
    return found


def _report(rule: str, offenders: list[str]) -> str:
    text = f"{rule}: {len(offenders)} offender(s)\n  " + "\n  ".join(offenders)
    print(text)
    return text


def test_engine_never_imports_daemon() -> None:
    offenders = engine_imports_of_daemon()
    assert not offenders, _report("engine imports daemon", offenders)


def test_jobs_are_dispatched_only_by_the_registry() -> None:
    offenders = job_kind_dispatch_outside_registry()
    assert not offenders, _report("job kind dispatch outside engine/jobs/registry.py", offenders)


def test_only_engine_store_calls_q() -> None:
    offenders = q_calls_outside_store()
    assert not offenders, _report("q() outside engine/store", offenders)


def test_routes_import_no_engine_store() -> None:
    offenders = route_imports_of_store()
    assert not offenders, _report("daemon/api/routes importing engine.store", offenders)


def test_the_scanners_find_each_kind_of_offence() -> None:
    def one(where: str, code: str) -> list[tuple[str, ast.Module]]:
        return [(where, ast.parse(code))]

    assert engine_imports_of_daemon(one("engine/x.py", "import daemon.app")) == ["engine/x.py:1 imports daemon.app"]
    assert engine_imports_of_daemon(one("engine/x.py", "importlib.import_module('daemon.worker')"))
    assert engine_imports_of_daemon(one("engine/x.py", "import daemonic")) == []
    assert route_imports_of_store(one("daemon/api/routes/x.py", "from engine import store"))
    assert q_calls_outside_store(one("daemon/x.py", "rows = conn.execute(q('get_job'))"))
    assert q_calls_outside_store(one("engine/store/x.py", "rows = conn.execute(q('get_job'))")) == []
    assert job_kind_dispatch_outside_registry(one("daemon/worker.py", "if job.kind == JOB_KIND: pass"))
    assert job_kind_dispatch_outside_registry(one("engine/jobs/registry.py", "if job.kind == K: pass")) == []
