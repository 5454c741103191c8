"""The per-companion paths (/v1/companions/{handle}/...): derived from the unscoped ones, for routes and contract alike.

Every companion endpoint exists twice: `/v1/turns` for the one companion of single-file mode and
`/v1/companions/{handle}/turns` for one companion of a directory (`anima run --dir`). Nobody writes the
second by hand: the router registers it from the same route table (daemon/api/http.py), and the
contract's scoped path items are generated here from the unscoped ones, so the two can never drift:

    python -m daemon.api.scoped --write     # regenerate daemon/api/openapi.json after editing a path
    python -m daemon.api.scoped --check     # exit 1 if openapi.json's scoped paths are out of date

tests/test_api_contract.py runs the check. A scoped operation is the unscoped one plus the `handle`
parameter, the per-companion bearer token, and the answers only a directory has (401/403, 404
unknown_companion, 503 companion_unavailable); its operationId is the unscoped one with a `companion`
prefix (operationIds are unique in a document).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from daemon.registry import HANDLE_PATTERN

SCOPE = "/v1/companions/{handle}"
SCOPE_PREFIX = "/v1/companions/{handle}/"
ID_PREFIX = "companion"
# The unscoped paths a directory answers too (the process's health and contract, the list of companions);
# every other unscoped path is single-file mode's. Only the list has no scoped twin.
HOST_PATHS = frozenset({"/v1/companions", "/v1/health", "/v1/openapi.json"})
UNSCOPED_ONLY = frozenset({"/v1/companions"})
HANDLE_PARAMETER = {
    "name": "handle",
    "in": "path",
    "required": True,
    "schema": {"type": "string", "pattern": HANDLE_PATTERN.pattern},
    "description": "The companion's id in the companions directory: the stem of DIR/<handle>.db "
                   "(GET /v1/companions lists them).",
}
SCOPED_RESPONSES = {
    "401": {"$ref": "#/components/responses/Unauthorized"},
    "403": {"$ref": "#/components/responses/Forbidden"},
    "404": {"$ref": "#/components/responses/UnknownCompanion"},
    "503": {"$ref": "#/components/responses/CompanionUnavailable"},
}
SCOPED_SECURITY: list[dict[str, list[str]]] = [{}, {"companionBearer": []}]
METHODS = ("get", "put", "post", "delete", "patch")


def scoped_path(path: str) -> str:
    """'/v1/turns' -> '/v1/companions/{handle}/turns'."""
    if not path.startswith("/v1/"):
        raise ValueError(f"{path} is not a /v1/ path")
    return SCOPE + path.removeprefix("/v1")


def unscoped_path(path: str) -> str:
    """'/v1/companions/{handle}/turns' -> '/v1/turns'; an unscoped path is returned as it is."""
    return "/v1/" + path.removeprefix(SCOPE_PREFIX) if path.startswith(SCOPE_PREFIX) else path


def is_scoped(path: str) -> bool:
    return path.startswith(SCOPE_PREFIX)


def scoped_operation_id(operation_id: str) -> str:
    return ID_PREFIX + operation_id[:1].upper() + operation_id[1:]


def _scoped_item(item: dict[str, Any]) -> dict[str, Any]:
    scoped = copy.deepcopy(item)
    scoped["parameters"] = [HANDLE_PARAMETER, *scoped.get("parameters", [])]
    for method in METHODS:
        op = scoped.get(method)
        if op is None:
            continue
        op["operationId"] = scoped_operation_id(op["operationId"])
        op["security"] = SCOPED_SECURITY
        # The unscoped 404 ("no such thing") and 503 stay documented by the shared Error shape; the
        # scoped ones say what only a directory can answer.
        # An OpenAI-compatible operation keeps its own error responses (OpenAI's shape, e.g. the chat endpoint).
        own = {status: r for status, r in op.get("responses", {}).items() if "OpenAIError" in json.dumps(r)}
        op["responses"] = {**op.get("responses", {}), **SCOPED_RESPONSES, **own}
    return scoped


def with_scoped_paths(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with every companion path item followed by its scoped twin (existing twins are regenerated)."""
    out = copy.deepcopy(doc)
    paths: dict[str, Any] = {}
    for path, item in doc["paths"].items():
        if is_scoped(path):
            continue
        paths[path] = item
        if path not in UNSCOPED_ONLY:
            paths[scoped_path(path)] = _scoped_item(item)
    out["paths"] = paths
    return out


def render(doc: dict[str, Any]) -> str:
    """openapi.json's text (the file's own format: 2-space indent, ASCII escapes)."""
    return json.dumps(doc, indent=2) + "\n"


def document_path() -> Path:
    return Path(str(resources.files("daemon.api") / "openapi.json"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m daemon.api.scoped", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="regenerate the scoped paths of openapi.json")
    parser.add_argument("--check", action="store_true", help="exit 1 when openapi.json is out of date")
    args = parser.parse_args(argv)
    path = document_path()
    text = path.read_text(encoding="utf-8")
    wanted = render(with_scoped_paths(json.loads(text)))
    if args.write:
        if wanted != text:
            path.write_text(wanted, encoding="utf-8")
            print(f"wrote {path}")
        return 0
    if wanted != text:
        print(f"{path} is out of date: run python -m daemon.api.scoped --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
