"""Validate request and response bodies against the OpenAPI 3.1 document (daemon/api/openapi.json).

The document is the contract: a request body that does not match its operation's schema is a 400
before any handler runs, and a response body that does not match is a 500 (a bug on our side, logged)
rather than something a front end has to guess about. Schemas are JSON Schema 2020-12 (OpenAPI 3.1),
resolved through one `referencing` registry that holds the whole document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from engine.errors import InputError
from engine.times import parse_client_instant

DOC_URI = "urn:anima:openapi"
METHODS = ("get", "put", "post", "delete", "patch")


class ResponseInvalid(Exception):
    """A handler produced a body the contract does not allow (a bug: the client gets a 500).

    Its message names the operation, the field path and the failed keyword, never a value, so it
    can be logged without chat or life text.
    """


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    path: str  # template, e.g. /v1/share/{share_id}/receipt
    operation_id: str
    request_schema: dict[str, Any] | None
    request_required: bool
    responses: dict[str, dict[str, Any] | None]  # status -> schema (None: no JSON body)
    parameters: tuple[dict[str, Any], ...]


@cache
def document() -> dict[str, Any]:
    text = (resources.files("daemon.api") / "openapi.json").read_text(encoding="utf-8")
    return json.loads(text)


def _resolve_local(ref: str) -> Any:
    node: Any = document()
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _json_schema_of(content_holder: dict[str, Any]) -> dict[str, Any] | None:
    if "$ref" in content_holder:
        content_holder = _resolve_local(content_holder["$ref"])
    content = content_holder.get("content", {}).get("application/json")
    return None if content is None else content.get("schema")


@cache
def operations() -> dict[tuple[str, str], Operation]:
    found: dict[tuple[str, str], Operation] = {}
    for path, item in document()["paths"].items():
        shared_params = tuple(item.get("parameters", ()))
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            body = op.get("requestBody")
            responses = {status: _json_schema_of(resp) for status, resp in op.get("responses", {}).items()}
            found[(method.upper(), path)] = Operation(
                method=method.upper(),
                path=path,
                operation_id=op["operationId"],
                request_schema=_json_schema_of(body) if body else None,
                request_required=bool(body and body.get("required")),
                responses=responses,
                parameters=shared_params + tuple(op.get("parameters", ())),
            )
    return found


@cache
def _registry() -> Registry:
    resource = Resource.from_contents(document(), default_specification=DRAFT202012)
    return Registry().with_resource(DOC_URI, resource)


def _absolute_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Document-local `#/...` refs become absolute, so they resolve inside the document from anywhere."""
    text = json.dumps(schema).replace('"$ref": "#/', f'"$ref": "{DOC_URI}#/')
    return json.loads(text)


@cache
def _validator(schema_json: str) -> Draft202012Validator:
    schema = _absolute_refs(json.loads(schema_json))
    return Draft202012Validator(schema, registry=_registry())


def validator_for(schema: dict[str, Any]) -> Draft202012Validator:
    return _validator(json.dumps(schema, sort_keys=True))


def _where(error: Any) -> str:
    return "body" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def _describe(error: Any) -> str:
    """For the client: where and why (the values are its own). Response errors use `_where` only: no text."""
    where = _where(error)
    message = error.message
    if len(message) > 160:
        message = message[:159] + "…"
    return f"{where}: {message}"


def validate_request(op: Operation, body: Any) -> None:
    """Raise InputError (400) naming the first offending field when `body` breaks the operation's schema."""
    if op.request_schema is None:
        return
    error = best_match(validator_for(op.request_schema).iter_errors(body))
    if error is not None:
        raise InputError(f"{op.method} {op.path}: {_describe(error)}; see GET /v1/openapi.json")


TIMESTAMP_REF = "#/components/schemas/Timestamp"


@cache
def timestamp_fields(method: str, path: str) -> tuple[str, ...]:
    """Top-level request-body properties that are a Timestamp: checked by engine.times.parse_client_instant
    after the schema (a pattern cannot say "not before 2000, at most a day ahead of now")."""
    op = operations()[(method, path)]
    schema = op.request_schema or {}
    if "$ref" in schema:
        schema = _resolve_local(schema["$ref"])
    return tuple(name for name, prop in schema.get("properties", {}).items() if prop.get("$ref") == TIMESTAMP_REF)


def validate_instants(op: Operation, body: Any, now: float) -> None:
    """InputError (400) naming the field when a Timestamp of the request lies outside the accepted window."""
    if not isinstance(body, dict):
        return
    for name in timestamp_fields(op.method, op.path):
        if name in body:
            parse_client_instant(body[name], f"body.{name}", now)


def validate_response(op: Operation, status: int, body: Any) -> None:
    schema = op.responses.get(str(status))
    if schema is None:
        if str(status) in op.responses or status >= 400:
            # Error statuses not listed per operation still must be the Error shape.
            schema = {"$ref": "#/components/schemas/Error"} if status >= 400 else None
        if schema is None:
            raise ResponseInvalid(f"{op.operation_id}: status {status} is not in the contract")
    error = best_match(validator_for(schema).iter_errors(body))
    if error is not None:
        raise ResponseInvalid(f"{op.operation_id} {status}: {_where(error)} fails {error.validator}")


def validate_error(body: Any) -> None:
    error = best_match(validator_for({"$ref": "#/components/schemas/Error"}).iter_errors(body))
    if error is not None:
        raise ResponseInvalid(f"error body: {_where(error)} fails {error.validator}")
