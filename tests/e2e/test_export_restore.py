"""Acceptance 2: export while the daemon ingests in a loop, restore into a new path, start a daemon on it: the same her.

Checked table by table against the manifest's hashes (before the new daemon starts, and for the
tables a start does not touch after it), and through the API: same persona and chart, same chats
and memories (recall finds a pre-export turn), same told life, mood within one heartbeat of decay.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from engine.snapshot import inspect, manifest_path
from engine.store import connect
from engine.store.life import add_life_event
from tests.api_support import SocketClient
from tests.conftest import REPO, run_anima

pytestmark = pytest.mark.e2e
CST = timezone(timedelta(hours=8))


def digests(db: Path) -> dict[str, Any]:
    return inspect(db)["tables"]  # engine/snapshot: what restore verifies against


def iso() -> str:
    return datetime.now(CST).isoformat(timespec="seconds")


async def test_export_under_load_then_restore_and_run(tmp_path: Path, start_daemon: Any) -> None:
    db = tmp_path / "a" / "anima.db"
    db.parent.mkdir()
    first = start_daemon(db)
    conn = connect(db)
    add_life_event(conn, "早上给阳台的薄荷浇了水", time.time() - 7200, told=True)
    conn.execute("INSERT INTO mem_semantic (key, statement, valid_from, recorded_at) VALUES ('pet', '用户养了一只猫叫芝麻', ?, ?)",
                 (time.time(), time.time()))
    conn.execute("INSERT INTO mem_relational (kind, statement, valid_from, recorded_at) VALUES ('nickname', '用户叫她小安安', ?, ?)",
                 (time.time(), time.time()))
    conn.close()
    snap = tmp_path / "backup" / "her.snapshot"
    snap.parent.mkdir()  # export never makes directories

    async with SocketClient(str(db) + ".sock") as her:
        status, _ = await her.call("POST", "/v1/turns", {"turn_id": "before-1", "user": "我的猫芝麻最爱吃小鱼干",
                                                          "companion": "芝麻真是个小馋猫", "ts": iso()})
        assert status == 200
        _, persona_before = await her.call("GET", "/v1/persona")
        stop = asyncio.Event()
        written = []

        async def ingest_loop() -> None:
            i = 0
            while not stop.is_set():
                status, _ = await her.call("POST", "/v1/turns", {"turn_id": f"load-{i}", "user": f"第{i}条消息，天气不错",
                                                                  "companion": "嗯嗯", "ts": iso()})
                assert status == 200
                written.append(i)
                i += 1

        loader = asyncio.create_task(ingest_loop())
        await asyncio.sleep(0.3)
        exporter = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "daemon", "--db", str(db), "export", str(snap), "--json",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
        out, err = await exporter.communicate()
        assert exporter.returncode == 0, err.decode()
        await asyncio.sleep(0.3)
        stop.set()
        await loader
        _, state_at_export = await her.call("GET", "/v1/state")

    manifest = json.loads(manifest_path(snap).read_text())
    assert json.loads(out)["file_sha256"] == manifest["file_sha256"]
    exported_turns = manifest["contents"]["chats"]["turns"]
    assert 1 < exported_turns < len(written) + 1  # taken mid-load: some load turns in, later ones not
    assert manifest["tables"]["chat_message"]["rows"] == 2 * exported_turns

    # Restoring onto the running daemon's file is refused; into a new path it works.
    refused = run_anima("--db", str(db), "restore", str(snap))
    assert refused.code == 2 and "running anima daemon" in refused.err
    target = tmp_path / "b" / "anima.db"
    done = run_anima("restore", str(snap), "--db", str(target), "--json")
    assert done.code == 0, done.err
    restored = digests(target)
    for table, want in manifest["tables"].items():
        if table != "event_log":  # which gains one row: the restore itself (engine/snapshot._record_restore)
            assert restored[table] == want, table
    assert restored["event_log"]["rows"] == manifest["tables"]["event_log"]["rows"] + 1
    assert first.stop() == 0

    second = start_daemon(target)
    async with SocketClient(str(target) + ".sock") as her:
        _, persona_after = await her.call("GET", "/v1/persona")
        assert persona_after == persona_before  # name, birth facts, chart, persona mapping
        _, ctx = await her.call("POST", "/v1/context", {"query": "芝麻爱吃什么"})
        assert "before-1" in ctx["context"]
        _, life = await her.call("GET", "/v1/life")
        assert [e["text"] for e in life["events"]] == ["早上给阳台的薄荷浇了水"]
        _, state = await her.call("GET", "/v1/state")
        assert state["counts"]["chat_turns"] == exported_turns
        assert state["counts"]["facts"] == 1 and state["counts"]["relations"] == 1
        for dim in ("v", "a", "d"):
            assert state["mood"][dim] == pytest.approx(state_at_export["mood"][dim], abs=0.05)
        # Vectors are derived data: turns exported mid-load before their vector was written are indexed by
        # the restored daemon, the way FTS would be rebuilt; nothing else it holds changes.
        for _ in range(600):
            _, health = await her.call("GET", "/v1/health")
            if health["vectors_pending"] == 0:
                break
            await asyncio.sleep(0.05)
        assert health["vectors_pending"] == 0
    assert second.stop() == 0
    after = digests(target)
    for table in ("companion", "chat_message", "mem_semantic", "mem_relational"):
        assert after[table] == manifest["tables"][table], table
    assert after["mem_embedding"]["rows"] == after["mem_episodic"]["rows"]
    assert after["mem_vec_rowids"]["rows"] == after["mem_episodic"]["rows"] >= manifest["tables"]["mem_vec_rowids"]["rows"]
