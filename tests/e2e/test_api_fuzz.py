"""Fuzz the API from its own contract (/v1/openapi.json): >= 2,000 generated requests, no 5xx, rejected ones change nothing.

Requests are generated from the OpenAPI document itself: valid bodies drawn from each operation's
JSON Schema, then mutated (a required field dropped, an unknown field added, a value of the wrong
type, a string past its limit), plus arbitrary JSON, arbitrary bytes, odd path and query values
and unknown methods. Each case checks: status < 500, an error body of the contract's shape, and —
for every 4xx — the database content unchanged (all tables hashed before and after). The main run
is in-process for speed (the real component on a Unix socket); a short run goes through the real
daemon's socket, which must still be alive and healthy afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.api import validation
from engine.snapshot import table_digests
from engine.store.life import add_life_event
from tests.api_support import ApiHarness, turn

CASES = int(os.environ.get("ANIMA_FUZZ_CASES", "2000"))
DOC = validation.document()
SCHEMAS = DOC["components"]["schemas"]


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
any_json = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                        max_leaves=12)
TEXT = st.text(alphabet=st.sampled_from(list("今天下雨了我的猫芝麻生病湖边散步白鹭 abcXYZ019!？。\n\"\\")), max_size=40)


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """A small JSON Schema -> hypothesis converter for the subset the contract uses."""
    schema = resolve(schema)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema and "properties" not in schema:
            return st.one_of([from_schema(s, depth + 1) for s in schema[key]])
    kinds = schema.get("type", "object")
    if isinstance(kinds, list):
        return st.one_of([from_schema({**schema, "type": k}, depth) for k in kinds])
    if kinds == "null":
        return st.none()
    if kinds == "boolean":
        return st.booleans()
    if kinds == "integer":
        return st.integers(schema.get("minimum", -1000), schema.get("maximum", 10**6))
    if kinds == "number":
        return st.floats(schema.get("minimum", -1e6), schema.get("maximum", 1e6), allow_nan=False)
    if kinds == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: len(s) <= schema.get("maxLength", 10**9) and len(s) >= schema.get("minLength", 0))
        return TEXT.filter(lambda s: len(s) >= schema.get("minLength", 0))
    if kinds == "array":
        return st.lists(from_schema(schema.get("items", {}), depth + 1), max_size=3)
    props = schema.get("properties", {})
    required = list(schema.get("required", []))
    if "anyOf" in schema:  # TurnRequest: at least one of user/companion
        required += [sorted(schema["anyOf"][0]["required"])[0]]
    optional = [p for p in props if p not in required]
    if depth > 2 or not props:
        return st.dictionaries(st.text(max_size=5), json_leaf, max_size=3)
    return st.fixed_dictionaries({p: from_schema(props[p], depth + 1) for p in required},
                                 optional={p: from_schema(props[p], depth + 1) for p in optional})


def mutate(body: Any, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    schema = resolve(schema)
    options: list[st.SearchStrategy[Any]] = [st.just(body), any_json]
    if isinstance(body, dict) and body:
        keys = sorted(body)
        options.append(st.sampled_from(keys).map(lambda k: {x: v for x, v in body.items() if x != k}))
        options.append(st.sampled_from(keys).flatmap(lambda k: json_leaf.map(lambda v: {**body, k: v})))
        options.append(st.text(min_size=1, max_size=8).map(lambda k: {**body, "x_" + k: 1}))
        long_keys = [k for k in keys if isinstance(body[k], str)]
        if long_keys:
            options.append(st.sampled_from(long_keys).map(lambda k: {**body, k: "长" * 8100}))
    return st.one_of(options)


OPERATIONS = sorted(validation.operations().values(), key=lambda o: (o.path, o.method))
PATH_VALUES = st.one_of(st.sampled_from(["sharing", "life", "nope", "sh_0", "..", "%00", "a" * 70]),
                        st.text(max_size=12))


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes | None]:
    roll = draw(st.integers(0, 19))
    if roll == 0:  # unknown method or path
        method = draw(st.sampled_from(["DELETE", "PATCH", "PUT", "POST", "GET"]))
        path = "/v1/" + urllib.parse.quote(draw(st.text(max_size=12)), safe="")
        return method, path, draw(st.one_of(st.none(), st.binary(max_size=30)))
    op = draw(st.sampled_from(OPERATIONS))
    path = op.path
    for param in ("share_id", "key"):
        if "{" + param + "}" in path:
            path = path.replace("{" + param + "}", urllib.parse.quote(draw(PATH_VALUES), safe="") or "x")
    if op.path == "/v1/life" and draw(st.booleans()):
        query = {k: draw(st.one_of(st.text(max_size=12), st.sampled_from(["0", "1e9", "2026-01-01T00:00:00+08:00",
                                                                           "nan", "-1", "1001", "5"])))
                 for k in draw(st.lists(st.sampled_from(["since", "limit", "other"]), max_size=2, unique=True))}
        path += "?" + urllib.parse.urlencode(query)
    if op.request_schema is None:
        return op.method, path, draw(st.one_of(st.none(), st.just(b"{}")))
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return op.method, path, draw(st.binary(max_size=40))
    body = draw(from_schema(op.request_schema))
    if kind >= 5:
        body = draw(mutate(body, op.request_schema))
    return op.method, path, json.dumps(body, ensure_ascii=False).encode()


def is_chat(path: str) -> bool:
    """Her socket's OpenAI-compatible route answers in OpenAI's error shape, and 503 while no model is configured."""
    return path.split("?")[0] == "/v1/chat/completions"


def check_status(path: str, status: int) -> bool:
    """No request may fail the server; the chat route's one 5xx is its documented 'no model configured' 503."""
    return status < 500 or (is_chat(path) and status == 503)


def check_error_shape(path: str, status: int, body: Any) -> None:
    if status >= 400:
        assert isinstance(body, dict) and set(body) == {"error"}, body
        keys = {"code", "message", "type", "param"} if is_chat(path) else {"code", "message"}
        assert set(body["error"]) == keys and isinstance(body["error"]["message"], str)


def fuzz_in_process(root: Path, cases: int) -> dict[str, int]:
    loop = asyncio.new_event_loop()
    api = loop.run_until_complete(ApiHarness(root).start())
    stats: dict[str, int] = {}

    async def seed() -> None:
        await api.call("POST", "/v1/turns", turn("seed-1", "我的猫芝麻生病了", "芝麻会好起来的"))
        await api.db(lambda c: add_life_event(c, "下午在湖边看白鹭", api.clock.now() - 600, told=False,
                                              origin="life", kind="completed"))

    loop.run_until_complete(seed())

    @settings(max_examples=cases, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(request=requests())
    def one(request: tuple[str, str, bytes | None]) -> None:
        method, path, raw = request
        before = loop.run_until_complete(api.db(table_digests))
        status, body = loop.run_until_complete(api.call(method, path, raw=raw))
        stats[f"{status // 100}xx"] = stats.get(f"{status // 100}xx", 0) + 1
        assert check_status(path, status), (method, path, raw[:200] if raw else raw, status, body)
        check_error_shape(path, status, body)
        if status >= 400:
            after = loop.run_until_complete(api.db(table_digests))
            assert after == before, f"rejected {method} {path} ({status}) changed the database"

    try:
        one()
        status, health = loop.run_until_complete(api.call("GET", "/v1/health"))
        assert status == 200 and health["alive"] is True
    finally:
        loop.run_until_complete(api.stop())
        loop.close()
    return stats


@pytest.mark.slow  # 2,000 requests with a full-database hash around each rejected one: ~25 s
def test_fuzz_from_the_contract_in_process(tmp_path: Path) -> None:
    stats = fuzz_in_process(tmp_path, CASES)
    assert sum(stats.values()) >= CASES
    # Both sides of the contract were exercised: accepted and rejected requests.
    assert stats.get("2xx", 0) > CASES // 10 and stats.get("4xx", 0) > CASES // 10, stats


@pytest.mark.e2e
def test_fuzz_through_the_real_daemon_socket(tmp_path: Path, start_daemon: Any) -> None:
    daemon = start_daemon(tmp_path / "anima.db")
    loop = asyncio.new_event_loop()

    async def open_session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(tmp_path / "anima.db.sock")))

    session = loop.run_until_complete(open_session())

    async def send(method: str, path: str, raw: bytes | None) -> tuple[int, Any]:
        headers = None if raw is None else {"Content-Type": "application/json"}
        async with session.request(method, "http://anima" + path, data=raw, headers=headers) as resp:
            data = await resp.read()
            return resp.status, json.loads(data) if data else None

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(request=requests())
    def one(request: tuple[str, str, bytes | None]) -> None:
        status, body = loop.run_until_complete(send(*request))
        assert check_status(request[1], status), (request, status, body)
        check_error_shape(request[1], status, body)

    try:
        one()
        status, health = loop.run_until_complete(send("GET", "/v1/health", None))
        assert status == 200 and health["alive"] is True
    finally:
        loop.run_until_complete(session.close())
        loop.close()
    assert daemon.proc.poll() is None
    assert daemon.stop() == 0
