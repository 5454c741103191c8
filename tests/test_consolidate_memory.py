"""Consolidation over real memory: a fact recalled 100 times stays one fact; untold life never becomes one; facts recall."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from engine.consolidate.facts_recall import fact_hits, list_facts
from engine.consolidate.run import consolidate_once
from engine.errors import InputError
from engine.memory.context import HEADER, record_injection
from engine.memory.importer import import_history
from engine.memory.ingest import TurnInput, index_life_event, record_turn
from engine.memory.recall import recall
from engine.settings import Settings
from engine.store.core import read_switches
from tests.memory_helpers import EVALDATA, SETTINGS, add_life_event, embedder, fresh_db

HISTORY = EVALDATA / "zh-dev" / "history.jsonl"
CANARY = "她整个下午在阳台上给薄荷换盆，弄得满手泥  CANARY-BOHE"
QUESTIONS = ["我现在住哪？", "你还记得我住在哪个区吗", "我家在哪来着", "我搬去哪了？", "我住的地方离医院远吗？"]


def home_facts(conn) -> list[dict]:
    return [f for f in list_facts(conn) if f["key"] == "home"]


@pytest.mark.slow
@pytest.mark.skipif(not HISTORY.exists(), reason="needs ../shared/evaldata/zh-dev")
def test_a_fact_recalled_one_hundred_times_stays_one_fact(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "echo.db")
    now = time.time()
    import_history(conn, embedder(), HISTORY, now)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), now)
    (home,) = home_facts(conn)
    assert "闵行" in home["statement"]
    active_before = len(list_facts(conn))
    on = replace(read_switches(conn), memory_facts=True)
    for i in range(100):
        now += 60
        turn = f"echo{i:03d}"
        ts_iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now))
        question = QUESTIONS[i % len(QUESTIONS)]
        # A small block keeps the echoed replies short (embedding cost grows with length).
        result = recall(conn, embedder(), question, settings=SETTINGS, switches=on, now=now, budget=160,
                        extra_sources=(fact_hits,))
        assert result.context and result.hits
        record_injection(conn, result, turn, now)
        echoed = result.context.replace(HEADER, "").strip()
        record_turn(conn, embedder(), TurnInput(turn, question, f"你跟我说过的：{echoed}", ts_iso), now)
    flagged = conn.execute("SELECT count(*) FROM mem_episodic WHERE echo_of_injection IS NOT NULL").fetchone()[0]
    # The replies repeat their blocks (a block made only of short past questions has no 8-character
    # shingle for the echo detector; the gate drops her replies either way).
    assert flagged >= 80
    report = consolidate_once(conn, embedder(), Settings(), read_switches(conn), now + 60)
    assert report["candidates"] == 0, report  # 100 questions and 100 echoes: nothing new to know
    assert report["gated"].get("companion_reply", 0) + report["gated"].get("echo", 0) == 100
    assert report["gated"]["question"] == 100
    assert home_facts(conn) == [home]
    assert len(list_facts(conn)) == active_before
    assert not [f for f in list_facts(conn, include_history=True) if "说过" in f["statement"] or "相关记忆" in f["statement"]]


def test_restating_a_fact_many_times_merges_into_it(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "restate.db")
    record_turn(conn, embedder(), TurnInput("t0", "我住在闵行", "好的。", "2026-07-22T22:00:00+08:00"), 0)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), 1)
    for i in range(1, 6):
        record_turn(conn, embedder(), TurnInput(f"t{i}", "对，我住在闵行", "嗯。", f"2026-07-2{2 + i}T22:00:00+08:00"), 0)
    report = consolidate_once(conn, embedder(), Settings(), read_switches(conn), 2)
    assert (report["candidates"], report["merged"], report["added"]) == (1, 1, 0)
    (home,) = home_facts(conn)
    assert len(home["evidence"]) == 6 and home["statement"].endswith("我住在闵行")


def test_untold_life_never_becomes_a_fact_and_told_life_may(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "life.db")
    record_turn(conn, embedder(), TurnInput("t1", "我住在上海徐汇", "嗯。", "2026-06-16T22:00:00+08:00"), 0)
    untold = add_life_event(conn, CANARY, 1_781_000_000.0, told=0)
    with pytest.raises(InputError):
        index_life_event(conn, embedder(), untold, 1)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), 2)
    everything = list_facts(conn, include_history=True)
    assert everything and not [f for f in everything if "CANARY" in f["statement"] or f["subject"] != "user"]

    # Even a memory row that slipped in for an untold event (a bug elsewhere) is stopped at the gate.
    leaked = add_life_event(conn, CANARY + " 2", 1_781_000_100.0, told=0)
    conn.execute("INSERT INTO mem_episodic (source, life_event_id, ts, raw, salience, created_at) "
                 "VALUES ('self_life', ?, 1781000100, ?, 0.9, 0)", (leaked, CANARY + " 2"))
    report = consolidate_once(conn, embedder(), Settings(), read_switches(conn), 3)
    assert report["gated"] == {"untold_life": 1} and report["added"] == 0

    # Once she has told it, and it is indexed as a self_life memory, it may become a fact about her.
    conn.execute("UPDATE life_event SET told = 1, told_at = 4, told_turn_id = 't2' WHERE id = ?", (untold,))
    index_life_event(conn, embedder(), untold, 4)
    report = consolidate_once(conn, embedder(), Settings(), read_switches(conn), 5)
    assert report["added"] == 1
    (hers,) = [f for f in list_facts(conn) if f["subject"] == "companion"]
    assert "薄荷" in hers["statement"] and hers["key"] == "none"


def test_facts_join_recall_and_superseded_ones_only_as_of(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "recall.db")
    record_turn(conn, embedder(), TurnInput("d06", "我住在上海徐汇", "嗯。", "2026-06-16T22:00:00+08:00"), 0)
    record_turn(conn, embedder(), TurnInput("d18", "我搬到了闵行，离医院近一点", "嗯。", "2026-07-22T22:00:00+08:00"), 0)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), 1)
    query = embedder().embed_queries(["我现在住在哪里"])[0]
    now_hits = fact_hits(conn, query, "我现在住在哪里", k=5, now=2)
    assert [h.key for h in now_hits] == ["home"] and "闵行" in now_hits[0].text
    assert now_hits[0].evidence[0]["turn_id"] == "d18"
    assert [m["role"] for m in now_hits[0].evidence[0]["messages"]] == ["user", "companion"]
    july_1 = 1_782_864_000.0  # 2026-07-01: after 徐汇, before 闵行
    then = fact_hits(conn, query, "我住在哪里", k=5, now=2, as_of=july_1)
    assert [h.key for h in then] == ["home"] and "徐汇" in then[0].text and then[0].valid_to is not None
    assert now_hits[0].to_json()["source"] == "fact"
