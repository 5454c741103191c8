"""Acceptance 4 over a real daemon: DELETE /v1/turns/{id} on its socket, and `anima forget` routed to it.

The history is made first (a fact consolidated from the canary turn, vectors indexed), then a real
daemon serves it; a second canary turn arrives over the API and is indexed by the daemon's indexer.
After the forgets no byte of the file, its WAL (the daemon still running) or a new export holds either
canary, /v1/context no longer returns them, and the daemon log never held them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engine.store import connect
from tests.api_support import SocketClient
from tests.conftest import run_anima
from tests.test_forget import ASCII, ZH, build_history, leaked

pytestmark = pytest.mark.e2e
QUERY = "我说过的暗号是什么？我现在住在哪里？"  # no canary in the query: the response echoes it


async def wait_indexed(client: SocketClient, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, health = await client.call("GET", "/v1/health")
        if status == 200 and health["vectors_pending"] == 0:
            return
        await _pause()
    raise AssertionError("the daemon's indexer did not catch up")


async def _pause() -> None:
    import asyncio

    await asyncio.sleep(0.1)


async def test_delete_over_the_socket_and_cli_through_the_daemon_leave_no_byte(tmp_path: Path,
                                                                               start_daemon: Any) -> None:
    db = tmp_path / "anima.db"
    built = build_history(db)
    daemon = start_daemon(db)
    async with SocketClient(str(tmp_path / "anima.db.sock")) as client:
        status, _ = await client.call("POST", "/v1/turns", {
            "turn_id": "t-api", "user": f"记住暗号{ASCII}，地点是{ZH}", "companion": "记住啦",
            "ts": "2026-07-24T21:00:00+08:00"})
        assert status == 200
        await wait_indexed(client)
        conn = connect(db)
        api_vectors = [r[0] for r in conn.execute(
            "SELECT v.embedding FROM mem_embedding v JOIN mem_episodic e ON e.id = v.id WHERE e.turn_id = 't-api'")]
        conn.close()
        assert len(api_vectors) == 2
        status, before = await client.call("POST", "/v1/context", {"query": QUERY, "turn_id": "t-q"})
        assert status == 200 and ASCII in before["context"]

        status, body = await client.call("DELETE", "/v1/turns/t-canary")
        assert status == 200, body
        assert body["turn_ids"] == ["t-canary"] and body["facts_deleted"] == 1 and body["memories"] == 2
        assert body["injections"] >= 1 and body["wal_truncated"] is True

        via_cli = run_anima("--db", str(db), "forget", "--turn", "t-api", "--json")
        assert via_cli.code == 0, via_cli.err
        assert json.loads(via_cli.out)["memories"] == 2

        ranged = run_anima("--db", str(db), "forget", "--since", "2026-07-23", "--yes", "--json")
        assert ranged.code == 0, ranged.err
        assert json.loads(ranged.out)["turn_ids"] == ["t-noodle"]  # DELETE /v1/turns?since=... on the daemon

        status, again = await client.call("DELETE", "/v1/turns/t-canary")
        assert status == 200 and again["already_forgotten"] is True and again["messages"] == 0
        status, missing = await client.call("DELETE", "/v1/turns/never-said")
        assert status == 404 and missing["error"]["code"] == "not_found"
        status, missing = await client.call("DELETE", "/v1/turns")
        assert status == 400 and set(missing) == {"error"}

        status, after = await client.call("POST", "/v1/context", {"query": QUERY})
        assert status == 200
        assert ASCII not in json.dumps(after, ensure_ascii=False) and ZH not in json.dumps(after, ensure_ascii=False)

        vectors = built["vectors"] + api_vectors
        for path in (db, Path(f"{db}-wal")):
            assert leaked(path, vectors) == [], path  # while the daemon runs
        export = tmp_path / "export.db"
        assert run_anima("--db", str(db), "export", str(export)).code == 0
        assert leaked(export, vectors) == []
    assert daemon.stop() == 0
    for path in (db, Path(f"{db}-wal")):
        assert leaked(path, vectors) == [], path
    log = daemon.log_text()
    assert log.count("event=memory.forgotten") >= 4 and "actor=api" in log
    assert ASCII not in log and ZH not in log
