"""The context block re-reads all of its hits' turns in one statement and shows what one query per hit showed."""

from __future__ import annotations

from pathlib import Path

from engine.memory.context import build_block, item_variants
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import RecallHit
from tests.memory_helpers import fresh_db


class NamedOnly:
    name = "stand-in"
    dim = 4


def test_the_block_reads_every_turn_at_once_and_equals_the_per_hit_reread(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "a.db")
    turns = [("t1", "我养了一只玄凤鹦鹉", "它叫什么名字？"), ("t2", "下周去成都出差", "记得带伞"),
             ("t3", "今天学会了换吉他弦", None)]
    hits = []
    for i, (turn_id, user, reply) in enumerate(turns):
        result = record_turn(conn, NamedOnly(), TurnInput(turn_id, user, reply, f"2026-11-0{i + 1}T10:00:00+08:00"),
                             1.8e9, embed=False)
        hits.append(RecallHit(memory_id=result.memory_ids[-1], turn_id=turn_id, message_id=result.message_ids[-1],
                              role="companion" if reply else "user", ts=f"2026-11-0{i + 1}T10:00:00+08:00",
                              text=reply or user, score=1.0 - i / 10, source="chat", ts_unix=1.79e9 + i))
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    block, memory_ids, _ = build_block(conn, hits, 2000, True, 1e13)
    conn.set_trace_callback(None)
    assert [s for s in statements if "FROM chat_message" in s] == [statements[0]]
    per_hit = [item_variants(conn, hit, True, 1e13)[0] for hit in hits]
    assert block.splitlines()[1:] == per_hit
    assert memory_ids == [h.memory_id for h in hits]
    assert "用户：我养了一只玄凤鹦鹉 ／ 你：它叫什么名字？" in block  # the whole turn, user side first
