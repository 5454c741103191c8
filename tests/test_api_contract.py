"""The contract (daemon/api/openapi.json): well-formed, matched one-to-one by routes, and enforced on both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from daemon.api import scoped, validation
from daemon.api.http import route_table
from daemon.api.routes import ROUTES
from daemon.registry import HANDLE_PATTERN
from engine.errors import InputError


def test_document_is_openapi_3_1_with_valid_schemas() -> None:
    doc = validation.document()
    assert doc["openapi"].startswith("3.1") and doc["info"]["version"]
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)  # raises naming the bad keyword
    ids = [op.operation_id for op in validation.operations().values()]
    assert len(ids) == len(set(ids))


def test_every_path_is_versioned_and_every_route_is_in_the_contract() -> None:
    declared = set(validation.operations())
    routed = {(m, p) for m, p, _, _ in route_table()}
    assert routed == declared
    assert all(path.startswith("/v1/") for _, path in declared)


def test_every_companion_route_has_a_scoped_twin_generated_from_it() -> None:
    """The scoped paths of openapi.json are python -m daemon.api.scoped's output, and each route has its twin."""
    assert scoped.main(["--check"]) == 0
    declared = validation.operations()
    for method, path, _ in ROUTES:
        twin = declared[(method, scoped.scoped_path(path))]
        assert twin.operation_id == scoped.scoped_operation_id(declared[(method, path)].operation_id)
        assert {"401", "403", "404", "503"} <= set(twin.responses)
        assert twin.parameters[0]["name"] == "handle" and twin.request_schema == declared[(method, path)].request_schema
    entry = validation.document()["components"]["schemas"]["CompanionEntry"]
    assert entry["properties"]["handle"]["pattern"] == HANDLE_PATTERN.pattern == scoped.HANDLE_PARAMETER["schema"]["pattern"]


def test_the_scoped_contract_check_catches_a_hand_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(scoped.document_path().read_text(encoding="utf-8"))
    doc["paths"]["/v1/companions/{handle}/turns"]["post"]["summary"] = "edited by hand"
    copy = tmp_path / "openapi.json"
    copy.write_text(scoped.render(doc), encoding="utf-8")
    monkeypatch.setattr(scoped, "document_path", lambda: copy)
    assert scoped.main(["--check"]) == 1
    assert scoped.main(["--write"]) == 0 and scoped.main(["--check"]) == 0
    assert "edited by hand" not in copy.read_text(encoding="utf-8")


def test_every_operation_documents_its_success_and_body_errors() -> None:
    for op in validation.operations().values():
        assert "200" in op.responses, op.operation_id
        if op.request_schema is not None:
            assert {"400", "413"} <= set(op.responses), op.operation_id


def test_request_validation_names_the_field() -> None:
    op = validation.operations()[("POST", "/v1/context")]
    with pytest.raises(InputError, match=r"body.budget"):
        validation.validate_request(op, {"query": "芝麻", "budget": 10})
    with pytest.raises(InputError, match="additional|unexpected"):
        validation.validate_request(op, {"query": "芝麻", "k": 3})
    validation.validate_request(op, {"query": "芝麻", "budget": 300, "turn_id": "t-1"})


@pytest.mark.parametrize("ts", ["2026-06-01T22:00:00+08:00", "2026-06-01T14:00:00Z", "2026-06-01T22:00:00.123+0800"])
def test_turn_timestamps_need_an_offset(ts: str) -> None:
    op = validation.operations()[("POST", "/v1/turns")]
    validation.validate_request(op, {"turn_id": "t1", "user": "你好", "ts": ts})
    with pytest.raises(InputError, match="ts"):
        validation.validate_request(op, {"turn_id": "t1", "user": "你好", "ts": ts[:19]})


def test_response_validation_reports_path_and_keyword_but_no_value() -> None:
    op = validation.operations()[("GET", "/v1/life")]
    bad = {"events": [{"id": 1, "ts": 0, "kind": "x", "text": "她的秘密", "told_at": None, "leak": "她的秘密"}]}
    with pytest.raises(validation.ResponseInvalid) as caught:
        validation.validate_response(op, 200, bad)
    assert "additionalProperties" in str(caught.value) and "秘密" not in str(caught.value)


def test_error_statuses_must_carry_the_error_shape() -> None:
    op = validation.operations()[("GET", "/v1/state")]
    validation.validate_response(op, 503, {"error": {"code": "unavailable", "message": "db"}})
    with pytest.raises(validation.ResponseInvalid):
        validation.validate_response(op, 503, {"detail": "db"})
    with pytest.raises(validation.ResponseInvalid):
        validation.validate_response(op, 201, {})
