"""The tree is its own map: every file a doc or docstring names exists, and ARCHITECTURE.md's modules are real.

Docstrings and config comments named daemon/calendar.py and engine/day.py long after both were gone;
this keeps such names honest (issue 26 item 6).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A path of the tree with a file ending: engine/memory/recall.py, daemon/api/openapi.json, tests/fixtures/x.jsonl.
FILE_NAME = re.compile(r"\b((?:engine|daemon|bench|tests|examples|systemd)/[\w./-]*\w\.(?:py|sql|toml|jsonl|json))\b")
# ARCHITECTURE.md's `engine/memory/recall.recall` and `daemon/worker.py`: a module or package, maybe an attribute.
MODULE_NAME = re.compile(r"`((?:engine|daemon)/[^`\s]*)")


def _readers() -> list[Path]:
    docs = [ROOT / name for name in ("README.md", "ARCHITECTURE.md", "config.toml")]
    code = [path for folder in ("engine", "daemon", "bench") for path in sorted((ROOT / folder).rglob("*"))
            if path.suffix in (".py", ".toml", ".sql")]
    return [path for path in docs + code if path.is_file()]


def missing_files(texts: list[tuple[str, str]]) -> list[str]:
    """`where:line names path` for each named file of the tree that does not exist."""
    found = []
    for where, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            for name in FILE_NAME.findall(line):
                if not (ROOT / name).exists():
                    found.append(f"{where}:{number} names {name}")
    return found


def _names_something(name: str) -> bool:
    """A file, a folder or a module of the tree, maybe followed by `.attribute` (`engine/inner.step_inner`)."""
    while True:
        if (ROOT / name).exists() or (ROOT / f"{name}.py").exists():
            return True
        folder, _, last = name.rpartition("/")
        if "." not in last:
            return False
        name = f"{folder}/{last.rpartition('.')[0]}"


def missing_modules(text: str) -> list[str]:
    """The names in backticks under engine/ or daemon/ that name nothing (a pattern such as cmd_<name>.py aside)."""
    return [name for name in MODULE_NAME.findall(text)
            if not any(mark in name for mark in "<*") and not _names_something(name.rstrip("/"))]


def test_docs_and_docstrings_name_only_files_that_exist() -> None:
    offenders = missing_files([(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in _readers()])
    assert not offenders, "\n".join(offenders)


def test_the_architecture_map_names_real_modules() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert not missing_modules(text)
    for flow in ("a turn", "a context request", "a beat", "a consolidation job"):
        assert re.search(rf"^## flow \d: {flow}\b", text.lower(), re.MULTILINE), flow
    for piece in ("A switch", "An endpoint", "A beat step", "A consolidation rule", "A mood input"):
        assert f"**{piece}**" in text


def test_the_checks_catch_a_stale_name() -> None:
    text = "the calendar (daemon/scheduler.py)\nfired by daemon/calendar.py, see engine/data/lineage.toml"
    assert missing_files([("x.py", text)]) == ["x.py:2 names daemon/calendar.py"]
    assert missing_modules("`engine/day.step` and `engine/memory/recall.recall`") == ["engine/day.step"]
