"""Privacy: untold life events carrying canaries never reach recall output, the context block or a log line."""

import itertools
import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import recall
from tests.memory_helpers import ON, SETTINGS, add_life_event, embedder, fresh_db

NOW = 1796083200.0
TURN_IDS = itertools.count()
WORDS = ["猫", "海边", "诗集", "加班", "栗子", "妈妈", "雨天", "咖啡", "跑步", "电影", "薄荷", "阳台", "the", "cat", "rain"]
sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map("".join)


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    return fresh_db(tmp_path_factory.mktemp("privacy") / "anima.db")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(st.tuples(sentences, st.one_of(st.none(), sentences)), min_size=1, max_size=4),
       life=st.lists(sentences, min_size=1, max_size=3), query=sentences, seed=st.integers(0, 10**9))
def test_canaries_never_leave(conn, caplog, history, life, query, seed):
    canaries = []
    for i, text in enumerate(life):
        canary = f"CANARY{seed}x{i}"
        canaries.append(canary)
        add_life_event(conn, f"{text} {canary}", NOW - 60, told=0)
    for user, companion in history:
        record_turn(conn, embedder(), TurnInput(f"p{next(TURN_IDS)}", user, companion, "2026-11-01T10:00:00+08:00"), NOW)
    with caplog.at_level(logging.DEBUG):
        for q in (query, " ".join(life), canaries[0]):
            result = recall(conn, embedder(), q, settings=SETTINGS, switches=ON, now=NOW, k=10)
            shown = json.dumps([result.to_json()["hits"], result.context], ensure_ascii=False)
            assert not any(c in shown for c in canaries)
    assert not any(c in caplog.text for c in canaries)
