"""Acceptance 3 of issue 10: a turn acknowledged by POST /v1/turns is found by a paraphrase in the very next /v1/context.

Against the real daemon over its Unix socket. The database starts with a backlog of memories
written without vectors (as `anima ingest --defer-embedding` leaves them), so the background
indexer, which drains oldest first at idle priority, is still busy with it when the new turn
arrives: the turn can only be found by meaning if the context request embeds it itself. The
paraphrase shares no word and no character pair with the turn, so the keyword lane cannot find it.
"""

from __future__ import annotations

import random
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from engine.memory.ingest import TurnInput, record_turn
from engine.memory.tokens import fts_tokens
from engine.store import connect
from tests.api_support import SocketClient, make_database
from tests.conftest import write_config
from tests.memory_helpers import embedder

pytestmark = pytest.mark.e2e

CST = timezone(timedelta(hours=8))
USER = "我下个月要搬去成都工作了"
REPLY = "那边的火锅很多呀"
PARAPHRASE = "打算换到哪座城市上班"
BACKLOG_TURNS = 400
SUBJECTS = ["我妈", "我同事", "我朋友小李", "我室友", "我表妹"]
EVENTS = ["今天去超市买了草莓", "下班路上下起了大雨", "周末想去湖边骑车", "最近在学做蛋糕", "晚上看了一部老电影",
          "早上起晚了差点迟到", "在读一本关于宇宙的书", "中午吃了一碗牛肉面", "感冒了嗓子好疼", "报名了游泳课"]


def write_backlog(db: Path, now: float) -> None:
    """Her history, acknowledged but not yet embedded (no vectors): the indexer's queue at start."""
    make_database(db, now)
    conn = connect(db)
    rng = random.Random(3)
    try:
        start = now - 90 * 86400
        for i in range(BACKLOG_TURNS):
            ts = datetime.fromtimestamp(start + i * 3600, CST).isoformat(timespec="seconds")
            text = f"{rng.choice(SUBJECTS)}{rng.choice(EVENTS)}（{i}）"
            record_turn(conn, embedder(), TurnInput(f"old-{i}", text, "嗯嗯", ts), now, embed=False)
    finally:
        conn.close()


def test_the_premise_shares_no_keyword() -> None:
    query_terms = set(fts_tokens(PARAPHRASE).split())
    for text in (USER, REPLY):
        assert not query_terms & set(fts_tokens(text).split()), text


async def test_a_turn_is_found_by_a_paraphrase_in_the_very_next_context(tmp_path: Path, start_daemon: Any) -> None:
    db = tmp_path / "anima.db"
    write_backlog(db, time.time())
    daemon = start_daemon(db, config=write_config(tmp_path / "config.toml", heartbeat_s=5.0))
    async with SocketClient(str(tmp_path / "anima.db.sock")) as her:
        ts = datetime.now(CST).isoformat(timespec="seconds")
        status, out = await her.call("POST", "/v1/turns", {"turn_id": "t-move", "user": USER, "companion": REPLY, "ts": ts})
        assert status == 200 and out["created"] is True
        status, ctx = await her.call("POST", "/v1/context", {"query": PARAPHRASE, "turn_id": "t-next"})
        assert status == 200
        assert "t-move" in ctx["context"] and "成都" in ctx["context"], ctx["context"]
        assert ctx["hits"][0]["turn_id"] == "t-move"
        status, health = await her.call("GET", "/v1/health")
        assert status == 200 and health["vectors_pending"] > 0  # the indexer had not reached it: the context did
    embedded = [int(n) for n in re.findall(r"api\.context\b.*?fresh_embedded=(\d+)", daemon.log_text())]
    assert embedded and embedded[0] >= 1, daemon.log_text()[-2000:]
    assert USER not in daemon.log_text() and PARAPHRASE not in daemon.log_text()
