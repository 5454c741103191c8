"""Fact hits: their own shape (fact_id, key, evidence) in the JSON contract, one citation per turn, and `anima recall` prints them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from daemon.api import validation
from daemon.cli import main as cli_main
from engine.consolidate.facts_recall import fact_hits
from engine.consolidate.run import consolidate_once
from engine.control import Switches
from engine.memory.context import build_block
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import recall
from engine.settings import Settings
from engine.store.core import read_switches
from tests.memory_helpers import SETTINGS, embedder, fresh_db

MOVED = "我搬到了闵行，离医院近一点"
QUESTION = "我现在住在哪里"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A file with two turns about home; consolidation made the newer one a `home` fact."""
    path = tmp_path / "anima.db"
    conn = fresh_db(path)
    record_turn(conn, embedder(), TurnInput("d06", "我住在上海徐汇", "嗯。", "2026-06-16T22:00:00+08:00"), 0)
    record_turn(conn, embedder(), TurnInput("d18", MOVED, "嗯。", "2026-07-22T22:00:00+08:00"), 0)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), 1)
    conn.close()
    return path


def facts_on(conn: Any) -> Switches:
    return replace(read_switches(conn), memory_facts=True)


def test_fact_hit_json_has_its_own_id_and_matches_the_contract(db: Path) -> None:
    conn = fresh_db(db)
    result = recall(conn, embedder(), QUESTION, settings=SETTINGS, switches=facts_on(conn), now=2,
                    extra_sources=(fact_hits,))
    facts = [h.to_json() for h in result.hits if h.source == "fact"]
    assert facts, "consolidation should have made the move a fact"
    fact = facts[0]
    assert isinstance(fact["fact_id"], int) and "memory_id" not in fact and fact["key"] == "home"
    assert [turn["turn_id"] for turn in fact["evidence"]] == ["d18"]
    schema = validation.document()["components"]["schemas"]
    hit = validation.validator_for(schema["Hit"])
    for item in result.to_json()["hits"]:
        hit.validate(item)  # every hit is exactly one of MemoryHit / FactHit
    bad = {**fact, "memory_id": fact["fact_id"]}
    bad.pop("fact_id")
    assert list(hit.iter_errors(bad)), "a fact id in memory_id must not pass the contract"


def test_a_fact_and_its_evidence_turn_are_cited_once(db: Path) -> None:
    conn = fresh_db(db)
    result = recall(conn, embedder(), QUESTION, settings=SETTINGS, switches=facts_on(conn), now=2, budget=2000,
                    extra_sources=(fact_hits,))
    sources = {(h.source, h.turn_id) for h in result.hits}
    assert ("fact", "d18") in sources and ("chat", "d18") in sources  # both were found ...
    assert result.context.count("闵行") == 1  # ... and the block says it once
    assert "d06" in result.context  # a different turn (the older home) is still cited

    # Whichever ranks first is the one shown, in either order.
    fact = next(h for h in result.hits if h.source == "fact")
    turn = next(h for h in result.hits if h.source == "chat" and h.turn_id == "d18")
    for order, shown in (([fact, turn], "fact"), ([turn, fact], "turn")):
        block, memory_ids, fact_ids = build_block(conn, order, 2000, True, 1e13)
        assert block.count("闵行") == 1
        assert (fact_ids, memory_ids) == (([fact.fact_id], []) if shown == "fact" else ([], [turn.memory_id]))


def test_anima_recall_prints_fact_hits(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Once a fact exists `anima recall` used to crash with KeyError: 'role'."""
    assert cli_main(["--db", str(db), "recall", QUESTION]) == 0
    out = capsys.readouterr().out
    assert "fact #" in out and " home " in out
    assert cli_main(["--db", str(db), "recall", QUESTION, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) >= {"query", "mode", "hits", "context"}  # the CLI contract stays
    fact = next(h for h in printed["hits"] if h["source"] == "fact")
    assert fact["fact_id"] > 0 and "memory_id" not in fact
    chat = next(h for h in printed["hits"] if h["source"] == "chat")
    assert {"memory_id", "turn_id", "message_id", "role", "ts", "text", "score"} <= set(chat)
