"""The API of a directory of companions (issue 14): scoped paths, per-companion tokens (401/403), unknown and faulted
companions, one privacy projection per companion; and single-file mode unchanged.

Three real companion files served by ONE ApiServer over a small in-test registry (tests/api_support.py
DirectoryHarness: real SQLite files, real AsyncStores, a real Unix socket). The routes under test are
enumerated from openapi.json, so a route added later is covered without touching this file.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from daemon.api import scoped, validation
from daemon.api.routes import ROUTES
from daemon.cli import main as cli_main
from engine.snapshot import table_digests
from engine.store import connect
from engine.store.life import add_life_event
from engine.store.tokens import digest_of, make_token, revoke_tokens, token_digests
from tests.api_support import ApiHarness, DirectoryHarness, make_database, turn

PATH_VALUES = {"key": "sharing", "share_id": "sh_nothing", "turn_id": "t-none"}
A_SECRET = "周三下午一个人去了植物园，在温室里给仙人掌起名叫刺猬甲"
B_SECRET = "半夜起来写了一封不会寄出的信，信里提到 CANARY-b2-99"


def scoped_operations() -> list[validation.Operation]:
    return sorted((op for op in validation.operations().values() if scoped.is_scoped(op.path)),
                  key=lambda op: (op.path, op.method))


def concrete(op: validation.Operation, handle: str) -> str:
    path = op.path.replace("{handle}", handle)
    for name, value in PATH_VALUES.items():
        path = path.replace("{" + name + "}", urllib.parse.quote(value))
    return path


def body_for(op: validation.Operation) -> dict[str, Any] | None:
    """A body that passes the request schema where one is needed (so the right token reaches the handler)."""
    if op.request_schema is None:
        return None
    rest = scoped.unscoped_path(op.path)
    return {"/v1/turns": turn("t-scope", "你好", "嗨"), "/v1/context": {"query": "你好"},
            "/v1/share": {"turn_id": "t-scope"}, "/v1/control/{key}": {"value": True},
            "/v1/share/{share_id}/receipt": {"turn_id": "t-scope"}}.get(rest, {})


@pytest.fixture
async def many(tmp_path: Path) -> Any:
    """a1 and b2 have tokens, c3 has none; x9 is known but faulted."""
    for handle in ("a1", "b2", "c3"):
        make_database(tmp_path / f"{handle}.db")
    tokens = {}
    for handle in ("a1", "b2"):
        conn = connect(tmp_path / f"{handle}.db")
        tokens[handle], _ = make_token(conn, 1_780_000_000.0)
        conn.close()
    harness = await DirectoryHarness(tmp_path, ["a1", "b2", "c3"]).start()
    harness.registry.faulted["x9"] = "database x9.db fails PRAGMA quick_check; it is damaged"
    harness.tokens = tokens  # type: ignore[attr-defined]
    yield harness
    await harness.stop()


def test_the_scoped_operations_are_every_companion_route() -> None:
    """The enumeration below covers every route: a new route gets its scoped twin and is tested with it."""
    assert {(op.method, scoped.unscoped_path(op.path)) for op in scoped_operations()} == \
        {(method, path) for method, path, _ in ROUTES}


async def test_a_token_of_another_companion_gets_403_on_every_route(many: Any) -> None:
    before = await many.db("b2", table_digests)
    for op in scoped_operations():
        path = concrete(op, "b2")
        status, body = await many.call(op.method, path, body_for(op), token=many.tokens["a1"])
        assert (status, body["error"]["code"]) == (403, "forbidden"), (op.operation_id, status, body)
    assert await many.db("b2", table_digests) == before  # nothing was read into a write, nothing changed


async def test_no_token_or_an_unknown_one_gets_401_on_every_route(many: Any) -> None:
    before = await many.db("b2", table_digests)
    for op in scoped_operations():
        path = concrete(op, "b2")
        for token in (None, "not-a-token-of-anyone-at-all", ""):
            status, body = await many.call(op.method, path, body_for(op), token=token)
            assert (status, body["error"]["code"]) == (401, "unauthorized"), (op.operation_id, token, status)
    assert await many.db("b2", table_digests) == before


async def test_her_own_token_reaches_every_route(many: Any) -> None:
    for op in scoped_operations():
        status, body = await many.call(op.method, concrete(op, "b2"), body_for(op), token=many.tokens["b2"])
        assert status not in (401, 403), (op.operation_id, status, body)
        assert status < 500, (op.operation_id, status, body)
    status, state = await many.call("GET", "/v1/companions/b2/state", token=many.tokens["b2"])
    assert status == 200 and state["counts"]["chat_messages"] == 2  # her turn landed in her file only
    assert (await many.call("GET", "/v1/companions/c3/state"))[1]["counts"]["chat_messages"] == 0


async def test_a_companion_without_a_token_is_open_but_refuses_another_companions_token(many: Any) -> None:
    assert (await many.call("GET", "/v1/companions/c3/state"))[0] == 200
    assert (await many.call("GET", "/v1/companions/c3/state", token=many.tokens["a1"]))[0] == 403
    # A header she never asked for is ignored on the socket, as single-file mode always did.
    assert (await many.call("GET", "/v1/companions/c3/state", token="stale-or-made-up-token"))[0] == 200


async def test_unknown_handle_is_404_unknown_companion(many: Any) -> None:
    for handle in ("zz", "A1", "a" * 65, "-a1", "a1.db", "x9-2"):
        status, body = await many.call("GET", f"/v1/companions/{urllib.parse.quote(handle)}/state",
                                       token=many.tokens["a1"])
        assert (status, body["error"]["code"]) == (404, "unknown_companion"), handle


async def test_a_faulted_companion_answers_503_and_her_health_says_why(many: Any) -> None:
    status, body = await many.call("GET", "/v1/companions/x9/health")
    assert (status, body["error"]["code"]) == (503, "companion_unavailable")
    assert "quick_check" in body["error"]["message"]
    status, body = await many.call("POST", "/v1/companions/x9/turns", turn("t1", "你好", "嗨"))
    assert (status, body["error"]["code"]) == (503, "companion_unavailable")
    assert "/v1/companions/x9/health" in body["error"]["message"]
    # The others go on serving.
    assert (await many.call("GET", "/v1/companions/c3/health"))[1]["alive"] is True
    assert (await many.call("POST", "/v1/companions/a1/turns", turn("t1", "你好", "嗨"),
                            token=many.tokens["a1"]))[0] == 200


async def test_a_companion_that_goes_faulted_keeps_her_token_on_her_503(many: Any) -> None:
    assert (await many.call("GET", "/v1/companions/a1/health", token=many.tokens["a1"]))[0] == 200
    await many.unserve("a1", reason="database a1.db is locked by another daemon (pid 4242)")
    assert (await many.call("GET", "/v1/companions/b2/state", token="a-miss-rebuilds-the-map"))[0] == 401
    assert (await many.call("GET", "/v1/companions/a1/health"))[0] == 401
    status, body = await many.call("GET", "/v1/companions/a1/health", token=many.tokens["a1"])
    assert status == 503 and "locked" in body["error"]["message"]
    await many.serve("a1")  # served again (a new context): her state and tokens are read anew
    assert (await many.call("GET", "/v1/companions/a1/health", token=many.tokens["a1"]))[0] == 200
    assert (await many.call("GET", "/v1/companions/a1/health"))[0] == 401


async def test_unscoped_companion_paths_answer_404_in_directory_mode(many: Any) -> None:
    for method, path, _ in ROUTES:
        if path in scoped.HOST_PATHS:
            continue
        status, body = await many.call(method, path.replace("{key}", "sharing").replace("{share_id}", "s")
                                       .replace("{turn_id}", "t"))
        assert (status, body["error"]["code"]) == (404, "not_found"), path
        assert "/v1/companions/{handle}/" in body["error"]["message"]


async def test_the_process_health_and_contract_stay_unscoped(many: Any) -> None:
    status, health = await many.call("GET", "/v1/health")
    assert status == 200 and health["alive"] is True
    assert (health["companions"], health["faulted"], health["db_ok"]) == (3, 1, False)
    status, doc = await many.call("GET", "/v1/openapi.json")
    assert status == 200 and "/v1/companions/{handle}/turns" in doc["paths"]


async def test_the_list_of_companions_shows_handles_and_reasons_only(many: Any) -> None:
    await many.call("POST", "/v1/companions/a1/turns", turn("t1", "我的猫叫芝麻", "芝麻真可爱"), token=many.tokens["a1"])
    status, listed = await many.call("GET", "/v1/companions")
    assert status == 200 and listed["mode"] == "many"
    assert listed["companions"] == [
        {"handle": "a1", "served": True, "reason": None},
        {"handle": "b2", "served": True, "reason": None},
        {"handle": "c3", "served": True, "reason": None},
        {"handle": "x9", "served": False, "reason": "database x9.db fails PRAGMA quick_check; it is damaged"},
    ]
    text = json.dumps(listed, ensure_ascii=False)
    assert "小安" not in text and "芝麻" not in text


async def test_untold_life_of_one_companion_never_reaches_another(many: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    now = many.clock.now()
    await many.db("a1", lambda c: add_life_event(c, A_SECRET, now - 600, told=False, origin="life", kind="completed"))
    await many.db("b2", lambda c: add_life_event(c, B_SECRET, now - 600, told=False, origin="life", kind="completed"))
    a, b = many.tokens["a1"], many.tokens["b2"]
    seen = []
    for handle, token in (("b2", b), ("c3", None)):
        for op in scoped_operations():
            seen.append(await many.call(op.method, concrete(op, handle), body_for(op), token=token))
        seen.append(await many.call("POST", f"/v1/companions/{handle}/context", {"query": "植物园 温室 仙人掌"},
                                    token=token))
    assert "刺猬甲" not in json.dumps(seen, ensure_ascii=False)
    # Each response is checked against ITS companion's untold index: a leak of a1's secret in a1's
    # response is withheld, and so is b2's in b2's.
    from daemon.api.routes import persona

    monkeypatch.setattr(persona, "describe_persona", lambda chart, p: {"近况": A_SECRET})
    assert (await many.call("GET", "/v1/companions/a1/persona", token=a))[0] == 500
    monkeypatch.setattr(persona, "describe_persona", lambda chart, p: {"近况": B_SECRET})
    assert (await many.call("GET", "/v1/companions/b2/persona", token=b))[0] == 500
    assert (await many.call("GET", "/v1/companions/a1/persona", token=a))[0] == 200  # not a1's secret
    blocked = many.log.named("privacy.blocked")
    assert len(blocked) == 2 and "刺猬甲" not in many.log.text() and "CANARY-b2-99" not in many.log.text()


async def test_a_share_offer_comes_from_her_own_life_only(tmp_path: Path) -> None:
    from engine.settings import ApiSettings

    generous = ApiSettings(share_min_gap_s=0, share_event_cooldown_s=0, share_threshold=0.0,
                           share_min_willingness=0.0)
    many = await DirectoryHarness(tmp_path, ["a1", "b2"], api=generous).start()
    try:
        now = many.clock.now()
        await many.db("a1", lambda c: add_life_event(c, A_SECRET, now - 600, told=False, origin="life",
                                                     kind="completed"))
        await many.call("POST", "/v1/companions/b2/turns", turn("t1", "你今天干嘛了", "没干什么"))
        status, offered = await many.call("POST", "/v1/companions/b2/share", {"turn_id": "t1"})
        assert status == 200 and offered["offer"] is None  # b2 has no life of her own yet; a1's is not hers
        await many.call("POST", "/v1/companions/a1/turns", turn("t1", "你今天干嘛了", "没干什么"))
        status, offered = await many.call("POST", "/v1/companions/a1/share", {"turn_id": "t1"})
        assert status == 200 and offered["offer"]["text"] == A_SECRET  # her own, through the one allowed field
    finally:
        await many.stop()


async def test_a_token_made_while_serving_takes_effect_at_her_next_beat(many: Any) -> None:
    assert (await many.call("GET", "/v1/companions/c3/state"))[0] == 200
    conn = connect(many.root / "c3.db")  # `anima token` from another process, on the live file
    token, _ = make_token(conn, many.clock.now())
    conn.close()
    await many.beat("c3")
    assert (await many.call("GET", "/v1/companions/c3/state"))[0] == 401
    assert (await many.call("GET", "/v1/companions/c3/state", token=token))[0] == 200
    conn = connect(many.root / "c3.db")
    revoke_tokens(conn, many.clock.now())
    conn.close()
    await many.beat("c3")
    assert (await many.call("GET", "/v1/companions/c3/state"))[0] == 200
    assert (await many.call("GET", "/v1/companions/a1/state", token=token))[0] == 401  # revoked: nobody's


async def test_a_companion_served_later_is_known_to_the_token_map(many: Any, tmp_path: Path) -> None:
    make_database(tmp_path / "d4.db")
    conn = connect(tmp_path / "d4.db")
    d4_token, _ = make_token(conn, many.clock.now())
    conn.close()
    await many.call("GET", "/v1/companions/a1/state", token="warm-the-map-with-a-miss")  # map built without d4
    await many.serve("d4")  # a new file, picked up by a scan
    assert (await many.call("GET", "/v1/companions/a1/state", token=d4_token))[0] == 403
    await many.unserve("d4")  # removed: her token is nobody's now
    assert (await many.call("GET", "/v1/companions/a1/state", token=d4_token))[0] == 401
    await many.serve("d4")
    assert (await many.call("GET", "/v1/companions/a1/state", token=d4_token))[0] == 403
    many.server.companion_stopped("d4")  # the host says she stopped: her digests go at once
    await many.unserve("d4")
    assert (await many.call("GET", "/v1/companions/d4/state", token=d4_token))[0] == 404


async def test_tcp_in_directory_mode_takes_the_listener_token_or_hers(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import aiohttp

    from engine.settings import ApiSettings
    from tests.test_api_security import free_port

    listener = "listener-token-0123456789abcdef"
    monkeypatch.setenv("ANIMA_TEST_TOKEN", listener)
    make_database(tmp_path / "a1.db")
    conn = connect(tmp_path / "a1.db")
    a1, _ = make_token(conn, 1_780_000_000.0)
    conn.close()
    port = free_port()
    many = await DirectoryHarness(tmp_path, ["a1", "c3"], api=ApiSettings(tcp_host="127.0.0.1", tcp_port=port,
                                                                          token_env="ANIMA_TEST_TOKEN")).start()
    try:
        async with aiohttp.ClientSession() as s:
            async def get(path: str, token: str | None) -> int:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with s.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r:
                    return r.status

            assert await get("/v1/companions/c3/state", None) == 401
            assert await get("/v1/companions/c3/state", listener) == 200
            assert await get("/v1/companions/a1/state", listener) == 401  # she has her own token: hers counts
            assert await get("/v1/companions/a1/state", a1) == 200
            assert await get("/v1/companions", None) == 401
            assert await get("/v1/companions", a1) == 200
    finally:
        await many.stop()


async def test_tcp_checks_the_token_before_saying_whether_a_handle_exists(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 25 (defect 10): an unknown handle answered 404 before the token check and a known one 401, so
    anyone who could reach the port could list her handles. Now no token is 401 for both, a companion's
    token is 403 for any handle not hers, and only the listener's token learns that a handle is unknown."""
    import aiohttp

    from engine.settings import ApiSettings
    from tests.test_api_security import free_port

    listener = "listener-token-0123456789abcdef"
    monkeypatch.setenv("ANIMA_TEST_TOKEN", listener)
    make_database(tmp_path / "a1.db")
    conn = connect(tmp_path / "a1.db")
    a1, _ = make_token(conn, 1_780_000_000.0)
    conn.close()
    port = free_port()
    many = await DirectoryHarness(tmp_path, ["a1", "c3"], api=ApiSettings(tcp_host="127.0.0.1", tcp_port=port,
                                                                          token_env="ANIMA_TEST_TOKEN")).start()
    try:
        async with aiohttp.ClientSession() as s:
            async def get(path: str, token: str | None) -> int:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with s.get(f"http://127.0.0.1:{port}{path}", headers=headers) as r:
                    return r.status

            for handle in ("c3", "a1", "nobody", "zz9"):
                assert await get(f"/v1/companions/{handle}/state", None) == 401, handle
                assert await get(f"/v1/companions/{handle}/state", "a-guess-0123456789abcdef") == 401, handle
            assert await get("/v1/companions/c3/state", a1) == 403
            assert await get("/v1/companions/nobody/state", a1) == 403
            assert await get("/v1/companions/nobody/state", listener) == 404
    finally:
        await many.stop()


# --- single-file mode -------------------------------------------------------------------------------------------


async def test_single_file_mode_answers_scoped_paths_404_and_lists_no_companions(tmp_path: Path) -> None:
    api = await ApiHarness(tmp_path).start()
    try:
        status, body = await api.call("GET", "/v1/companions/a1/state")
        assert (status, body["error"]["code"]) == (404, "not_found") and "/v1/state" in body["error"]["message"]
        assert await api.call("GET", "/v1/companions") == (200, {"mode": "single", "companions": []})
        assert (await api.call("GET", "/v1/state"))[0] == 200
    finally:
        await api.stop()


async def test_single_file_mode_honours_her_token_but_keeps_health_open(tmp_path: Path) -> None:
    api = await ApiHarness(tmp_path).start()
    try:
        # Without a token of her own, headers on the socket are ignored, as before.
        assert (await api.call("GET", "/v1/state", headers={"Authorization": "Bearer anything-at-all"}))[0] == 200
        token, _ = await api.db(make_token, api.clock.now())
        await api.beat(15)
        assert (await api.call("GET", "/v1/state"))[0] == 401
        assert (await api.call("GET", "/v1/state", headers={"Authorization": f"Bearer {token}"}))[0] == 200
        assert (await api.call("GET", "/v1/health"))[0] == 200
    finally:
        await api.stop()


# --- the store and the command ----------------------------------------------------------------------------------


def test_only_the_sha256_of_a_token_is_stored_and_a_new_one_replaces_the_old(tmp_path: Path) -> None:
    make_database(tmp_path / "a.db")
    conn = connect(tmp_path / "a.db")
    first, replaced = make_token(conn, 1.0)
    assert not replaced and token_digests(conn) == {hashlib.sha256(first.encode()).hexdigest()}
    second, replaced = make_token(conn, 2.0)
    assert replaced and token_digests(conn) == {digest_of(second)} and first != second and len(second) >= 43
    assert revoke_tokens(conn, 3.0) == 1 and token_digests(conn) == frozenset() and revoke_tokens(conn, 4.0) == 0
    kinds = [r[0] for r in conn.execute("SELECT kind FROM event_log WHERE kind LIKE 'token.%' ORDER BY id")]
    assert kinds == ["token.created", "token.created", "token.revoked"]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    raw = (tmp_path / "a.db").read_bytes()
    assert first.encode() not in raw and second.encode() not in raw


def test_the_table_refuses_anything_but_a_hex_digest(tmp_path: Path) -> None:
    make_database(tmp_path / "a.db")
    conn = connect(tmp_path / "a.db")
    try:
        for stored in ("plain-token-text", "Z" * 64, "A" * 64):  # the driver may be pysqlite3: match the message
            with pytest.raises(Exception, match="CHECK constraint failed"):
                conn.execute("INSERT INTO api_token (sha256, created_at) VALUES (?, 0)", (stored,))
    finally:
        conn.close()


def test_anima_token_prints_it_once_and_revokes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_database(tmp_path / "a1.db")
    assert cli_main(["token", "--dir", str(tmp_path), "--id", "a1", "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    conn = connect(tmp_path / "a1.db")
    assert token_digests(conn) == {digest_of(made["token"])} and made["replaced"] is False
    conn.close()
    assert cli_main(["token", "--db", str(tmp_path / "a1.db"), "--revoke"]) == 0
    assert "revoked 1" in capsys.readouterr().out
    conn = connect(tmp_path / "a1.db")
    assert token_digests(conn) == frozenset()
    conn.close()


@pytest.mark.parametrize("argv", [
    ["token", "--dir", "{dir}", "--id", "Bad.Handle"],
    ["token", "--dir", "{dir}"],
    ["token", "--dir", "{dir}", "--id", "a1", "--db", "{dir}/a1.db"],
    ["token", "--db", "{dir}/missing.db"],
])
def test_anima_token_refuses_bad_input_with_exit_2(tmp_path: Path, argv: list[str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    make_database(tmp_path / "a1.db")
    before = (tmp_path / "a1.db").read_bytes()
    assert cli_main([a.replace("{dir}", str(tmp_path)) for a in argv]) == 2
    assert capsys.readouterr().err.startswith("anima: token:")
    assert not (tmp_path / "missing.db").exists() and (tmp_path / "a1.db").read_bytes() == before
