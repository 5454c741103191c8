"""Named SQL queries, loaded once from `engine/store/queries/*.sql` (`-- name: claim_job` sections).

Other modules call `q("claim_job")` and never format SQL; the `.sql` files are the one place to
read what anima asks of its database.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@cache
def all_queries() -> dict[str, str]:
    folder = resources.files("engine.store") / "queries"
    found: dict[str, str] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        text = entry.read_text(encoding="utf-8")
        parts = _HEADER.split(text)
        # parts = [preamble, name1, body1, name2, body2, ...]
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise RuntimeError(f"query {name!r} is defined twice ({entry.name})")
            found[name] = body.strip().rstrip(";")
    return found


def q(name: str) -> str:
    """The SQL text of the query called `name`."""
    try:
        return all_queries()[name]
    except KeyError:
        raise KeyError(f"no query named {name!r} in engine/store/queries/*.sql") from None
