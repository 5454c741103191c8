"""The layers hold: engine never imports daemon; only engine/store calls q(); the CLI and the API import no
engine.store (they are two transports over engine/usecases); engine/store imports nothing of the domain; no
import cycle among modules, nor between memory, consolidation and jobs; no `.get("…")` on switches; jobs
are dispatched only by the registry.

Rules not yet true are xfail(strict=True) with their offenders in the failure message (pytest -rx shows
it): the day the last offender goes, the test passes, strict turns that into a failure, and the xfail
mark is deleted so the rule is enforced from then on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest

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


def transport_imports_of_store(files: Sources | None = None) -> list[str]:
    """The CLI and the API reach her file only through engine/usecases (issue 26 item 5)."""
    return _imports_of(files or sources("daemon/cli", "daemon/api"), "engine.store")


def api_imports_of_cli(files: Sources | None = None) -> list[str]:
    """The API serves; the CLI may be its client (it finds her socket through daemon/api/listen.py), never
    the other way round: what both need (replication lags) sits below both."""
    return _imports_of(files or sources("daemon/api"), "daemon.cli")


# What engine/store may import of engine: leaves that import nothing else of engine (checked below), so the
# store stays the bottom layer: the error hierarchy, and the switch registry (names, defaults, value checks).
STORE_MAY_IMPORT = ("engine.store", "engine.errors", "engine.control")


def store_imports_of_engine(files: Sources | None = None) -> list[str]:
    found = []
    for where, tree in files or sources("engine/store"):
        for line, module in imported_modules(tree):
            if _is(module, "engine") and module != "engine" and not any(_is(module, ok) for ok in STORE_MAY_IMPORT):
                found.append(f"{where}:{line} imports {module}")
    return sorted(set(found))


def _module_name(where: str) -> str:
    name = where.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def _targets(where: str, node: ast.Import | ast.ImportFrom, known: set[str]) -> Iterator[str]:
    """The modules of the tree one import statement loads (relative ones resolved; `from p import m` is p.m)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = _module_name(where).split(".")
            if not where.endswith("__init__.py"):
                package = package[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join([*package, *([node.module] if node.module else [])])
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            yield name


def import_graph(files: Sources | None = None) -> dict[str, dict[str, int]]:
    """Module -> {imported module: line}, counting every import: top-level, in a function, under TYPE_CHECKING."""
    parsed = list(files or sources("engine", "daemon"))
    known = {_module_name(where) for where, _ in parsed}
    graph: dict[str, dict[str, int]] = {}
    for where, tree in parsed:
        module = _module_name(where)
        edges = graph.setdefault(module, {})
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(where, node, known):
                    if target != module:
                        edges.setdefault(target, node.lineno)
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each strongly connected set of two or more modules, with its edges as `module:line -> module`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[str] = []

    def visit(start: str) -> None:  # Tarjan, iterative (an import chain may be deeper than the recursion limit)
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    edges = [f"{a}:{graph[a][b]} -> {b}" for a in sorted(members) for b in sorted(graph.get(a, {}))
                             if b in members]
                    found.append(f"{len(members)} modules: " + "; ".join(edges))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


# Memory is below consolidation, and consolidation below jobs (the registry runs consolidation's handler):
# each package imports only packages to its left, never to its right.
PACKAGE_ORDER = ("engine.memory", "engine.consolidate", "engine.jobs")


def package_order_breaks(graph: dict[str, dict[str, int]] | None = None) -> list[str]:
    graph = graph if graph is not None else import_graph()

    def rank(module: str) -> int | None:
        return next((i for i, package in enumerate(PACKAGE_ORDER) if _is(module, package)), None)

    found = []
    for module, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            here, there = rank(module), rank(target)
            if here is not None and there is not None and there > here:
                found.append(f"{module}:{line} imports {target}")
    return found


def package_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The module graph folded to engine's top-level packages and modules (engine.memory, engine.settings ...)."""
    folded: dict[str, dict[str, int]] = {}
    for module, edges in graph.items():
        if not _is(module, "engine"):
            continue
        here = ".".join(module.split(".")[:2])
        for target, line in edges.items():
            there = ".".join(target.split(".")[:2])
            if _is(target, "engine") and there != here and target != "engine":
                folded.setdefault(here, {}).setdefault(there, line)
    return folded


SWITCH_HOLDERS = ("controls", "switches")


def switch_dict_reads(files: Sources | None = None) -> list[str]:
    """`controls.get("x", …)` and the like: a switch read from a dict with its default repeated at the call,
    where the typed Switches field (one default, in engine/control.REGISTRY) belongs."""
    found = []
    for where, tree in files or sources("engine", "daemon"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                holder = node.func.value
                name = holder.attr if isinstance(holder, ast.Attribute) else holder.id if isinstance(holder, ast.Name) \
                    else ""
                if any(word in name.lower() for word in SWITCH_HOLDERS):
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


def test_cli_and_api_import_no_engine_store() -> None:
    offenders = transport_imports_of_store()
    assert not offenders, _report("daemon/cli or daemon/api importing engine.store", offenders)


def test_the_api_imports_nothing_of_the_cli() -> None:
    offenders = api_imports_of_cli()
    assert not offenders, _report("daemon/api importing daemon/cli", offenders)


def test_engine_store_imports_nothing_of_the_domain() -> None:
    offenders = store_imports_of_engine()
    assert not offenders, _report("engine/store importing the domain", offenders)
    leaves = {module: edges for module, edges in import_graph().items() if module in STORE_MAY_IMPORT[1:]}
    assert set(leaves) == set(STORE_MAY_IMPORT[1:])
    for module, edges in leaves.items():  # what the store may import is itself a leaf of engine
        assert set(edges) <= {"engine.errors"}, f"{module} imports {sorted(edges)}"


def test_no_import_cycle_among_modules() -> None:
    offenders = import_cycles(import_graph())
    assert not offenders, _report("import cycles", offenders)


@pytest.mark.xfail(strict=True, reason="engine.settings validates [life] city through engine.life.place, and "
                   "engine.life.state reads engine.settings: the city check moves with the home work (i24b)")
def test_no_import_cycle_among_engine_packages() -> None:
    offenders = import_cycles(package_graph(import_graph()))
    assert not offenders, _report("import cycles among engine's packages", offenders)


def test_memory_consolidation_and_jobs_import_in_one_direction() -> None:
    offenders = package_order_breaks()
    assert not offenders, _report(f"imports against {' < '.join(PACKAGE_ORDER)}", offenders)


def test_no_switch_is_read_from_a_dict() -> None:
    offenders = switch_dict_reads()
    assert not offenders, _report('.get("…") on switches', offenders)


def test_the_scanners_find_each_kind_of_offence() -> None:
    def one(where: str, code: str) -> list[tuple[str, ast.Module]]:
        return [(where, ast.parse(code))]

    assert engine_imports_of_daemon(one("engine/x.py", "import daemon.app")) == ["engine/x.py:1 imports daemon.app"]
    assert engine_imports_of_daemon(one("engine/x.py", "importlib.import_module('daemon.worker')"))
    assert engine_imports_of_daemon(one("engine/x.py", "import daemonic")) == []
    assert transport_imports_of_store(one("daemon/api/routes/x.py", "from engine import store"))
    assert q_calls_outside_store(one("daemon/x.py", "rows = conn.execute(q('get_job'))"))
    assert q_calls_outside_store(one("engine/store/x.py", "rows = conn.execute(q('get_job'))")) == []
    assert job_kind_dispatch_outside_registry(one("daemon/worker.py", "if job.kind == JOB_KIND: pass"))
    assert job_kind_dispatch_outside_registry(one("engine/jobs/registry.py", "if job.kind == K: pass")) == []
    assert transport_imports_of_store(one("daemon/cli/x.py", "from engine.store.core import get_companion"))
    assert transport_imports_of_store(one("daemon/api/x.py", "from engine.usecases import share")) == []
    assert api_imports_of_cli(one("daemon/api/metrics.py", "def f():\n    from daemon.cli.cmd_replication import x"))
    assert store_imports_of_engine(one("engine/store/x.py", "from engine.share import Candidate"))
    assert store_imports_of_engine(one("engine/store/x.py", "from engine.errors import StoreError")) == []
    circle = [("daemon/a.py", ast.parse("from daemon import b")),
              ("daemon/b.py", ast.parse("def f():\n    from . import c")),
              ("daemon/c.py", ast.parse("if TYPE_CHECKING:\n    import daemon.a")), ("daemon/d.py", ast.parse(""))]
    assert import_cycles(import_graph(circle)) == [
        "3 modules: daemon.a:1 -> daemon.b; daemon.b:2 -> daemon.c; daemon.c:2 -> daemon.a"]
    assert import_cycles(import_graph(circle[:2] + circle[3:])) == []
    folded = package_graph({"engine.life.state": {"engine.settings": 25}, "engine.settings": {"engine.life.place": 9},
                            "daemon.app": {"engine.life": 3}})
    assert folded == {"engine.life": {"engine.settings": 25}, "engine.settings": {"engine.life": 9}}
    assert import_cycles(folded) == ["2 modules: engine.life:25 -> engine.settings; engine.settings:9 -> engine.life"]
    assert package_order_breaks({"engine.memory.forget": {"engine.consolidate.plan": 3}}) == [
        "engine.memory.forget:3 imports engine.consolidate.plan"]
    assert package_order_breaks({"engine.jobs.registry": {"engine.consolidate.run": 3}}) == []
    assert switch_dict_reads(one("engine/x.py", 'if controls.get("memory_search", True): pass'))
    assert switch_dict_reads(one("daemon/x.py", 'if ctx.controls.get("consolidation", True): pass'))
    assert switch_dict_reads(one("engine/x.py", 'if body.get("stream", False): pass')) == []
