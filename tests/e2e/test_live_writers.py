"""CLI writers next to a running daemon: `anima ingest` and `anima reembed` are refused with one line, exit 2,
and change nothing; live requests go on answering (issue 25 defects 5 and 6).

Before, ingest gave live requests 500 "database is locked" and stalled the heartbeat for half a minute,
and reembed swapped the vector table under turns arriving meanwhile, stranding their vectors while
/v1/health said 0 pending. Once the daemon has stopped, the same commands run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.api_support import SocketClient, turn
from tests.conftest import run_anima, write_config

pytestmark = pytest.mark.e2e


def history_file(path: Path, n: int = 5) -> Path:
    lines = []
    for i in range(n):
        ts = f"2026-05-0{1 + i % 9}T20:00:00+08:00"
        lines.append({"ts": ts, "turn_id": f"h{i}", "role": "user", "text": f"以前聊过的第{i}件事"})
        lines.append({"ts": ts, "turn_id": f"h{i}", "role": "assistant", "text": "记得呀"})
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return path


def digest(db: Path) -> str:
    """Her content as a reader sees it (the daemon's own beats move daemon_state and mood, so not the bytes)."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        rows = [conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()  # noqa: S608 - fixed names
                for t in ("chat_message", "mem_episodic", "mem_embedding", "embedding_model")]
    finally:
        conn.close()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


async def live_turns(sock: str, first: int, n: int) -> list[int]:
    """Post n turns, then wait until her indexer has given them their vectors (health: 0 pending)."""
    async with SocketClient(sock) as her:
        statuses = [(await her.call("POST", "/v1/turns", turn(f"live{i}", f"现在说的第{i}句", "嗯")))[0]
                    for i in range(first, first + n)]
        for _ in range(600):
            if (await her.call("GET", "/v1/health"))[1].get("vectors_pending") == 0:
                return statuses
            await asyncio.sleep(0.05)
    raise AssertionError("the daemon never indexed the live turns")


def test_ingest_and_reembed_on_a_running_daemon_are_refused_and_change_nothing(tmp_path: Path,
                                                                               start_daemon: Any) -> None:
    db = tmp_path / "anima.db"
    sock = str(tmp_path / "a.sock")
    config = write_config(tmp_path / "config.toml", extra=f"[api]\nsocket_path = \"{sock}\"\n")
    daemon = start_daemon(db, config=config)
    assert asyncio.run(live_turns(sock, 0, 3)) == [200] * 3
    source = history_file(tmp_path / "history.jsonl")
    before = digest(db)
    for command in (["ingest", str(source)], ["reembed"], ["reembed", "--pending"]):
        refused = run_anima("--config", str(config), "--db", str(db), *command)
        assert refused.code == 2, (command, refused.err)
        assert len(refused.err.strip().splitlines()) == 1 and "running anima daemon" in refused.err
        assert "Traceback" not in refused.err
    assert digest(db) == before
    assert asyncio.run(live_turns(sock, 3, 3)) == [200] * 3  # she answers on, nothing locked
    assert daemon.stop() == 0

    done = run_anima("--config", str(config), "--db", str(db), "ingest", str(source))
    assert done.code == 0, done.err
    assert "imported 5 turns, 10 messages (10 new" in done.out
    again = run_anima("--config", str(config), "--db", str(db), "reembed")
    assert again.code == 0, again.err
    assert "re-embedded" in again.out and "None" not in again.out
