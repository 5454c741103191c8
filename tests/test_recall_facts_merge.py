"""Consolidated facts merge with episode hits on one scale: age-weighed like episodes, time windows first,
and the episodes in the order recall's rules gave them.

Sorted by raw score, the nightly facts jumped over every episode: on zh-dev2 with its facts, R@1 fell
from 64.9 to 56.8 and the time questions from 8/9 to 3/9 at R@5. Sorted by raw score with the episodes,
supersession and MMR were undone, even when no fact came back.
"""

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from engine.consolidate.facts_recall import fact_hits
from engine.consolidate.run import consolidate_once
from engine.control import Switches
from engine.memory.importer import import_history
from engine.memory.ranking import RankParams
from engine.memory.recall import merge_extra_hits, recall
from engine.memory.timeq import TimeWindow
from engine.settings import Settings
from tests.memory_helpers import ON, SETTINGS, embedder, fresh_db, require_evaldata

DAY = 86400.0
NOW = 1796083200.0
SMALL = Path(__file__).resolve().parent / "fixtures" / "recall_small.jsonl"


@dataclass(frozen=True)
class Hit:
    name: str
    score: float
    ts_unix: float


def test_an_old_fact_is_weighed_for_its_age_like_an_episode():
    episode = Hit("episode", 0.60, NOW - 2 * DAY)
    fact = Hit("fact", 0.62, NOW - 300 * DAY)  # nearer by cosine, but from a year ago
    merged = merge_extra_hits([episode], [fact], RankParams(), NOW, None)
    assert [h.name for h in merged] == ["episode", "fact"]
    assert [h.name for h in merge_extra_hits([episode], [fact], RankParams(use_decay=False), NOW, None)] == [
        "fact", "episode"]


def test_a_time_window_puts_its_own_hits_first_whatever_their_source():
    window = TimeWindow(start=NOW - 10 * DAY, end=NOW - 5 * DAY, expression="上周")
    inside = Hit("episode in window", 0.3, NOW - 7 * DAY)
    fact = Hit("fact outside", 0.9, NOW - 1 * DAY)
    assert [h.name for h in merge_extra_hits([inside], [fact], RankParams(), NOW, window)] == [
        "episode in window", "fact outside"]


def test_no_fact_leaves_the_episodes_in_the_order_the_rules_gave_them():
    """Supersession lifted the newer statement above the stale one, which scores higher by cosine."""
    episodes = [Hit("newer", 0.50, NOW - 1 * DAY), Hit("stale", 0.60, NOW - 90 * DAY)]
    assert [h.name for h in merge_extra_hits(episodes, [], RankParams(), NOW, None)] == ["newer", "stale"]


def test_with_facts_on_and_none_consolidated_yet_recall_answers_as_with_facts_off(tmp_path):
    """The daemon's default switches (memory_facts on) before the first night: the same hits, in the same order."""
    conn = fresh_db(tmp_path / "anima.db")
    import_history(conn, embedder(), SMALL, NOW)
    for query in ("我现在住在哪个区", "公司年会是怎么安排的", "我对什么过敏"):
        off = recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=NOW).hits
        on = recall(conn, embedder(), query, settings=SETTINGS, switches=replace(ON, memory_facts=True), now=NOW,
                    extra_sources=(fact_hits,)).hits
        assert [h.memory_id for h in on] == [h.memory_id for h in off], query


@pytest.mark.slow
def test_facts_on_do_not_cost_zh_dev2_its_time_questions(tmp_path):
    folder = require_evaldata("zh-dev2")
    conn = fresh_db(tmp_path / "anima.db")
    import_history(conn, embedder(), folder / "history.jsonl", NOW)
    consolidate_once(conn, embedder(), Settings(), Switches.defaults(), NOW)
    probes = [p for p in json.loads((folder / "probes.json").read_text(encoding="utf-8")) if p.get("cat") == "time"]
    found = {False: 0, True: 0}
    for probe in probes:
        for facts in (False, True):
            hits = recall(conn, embedder(), probe["q"], settings=SETTINGS, switches=replace(ON, memory_facts=facts),
                          now=NOW, extra_sources=(fact_hits,)).hits
            found[facts] += bool({h.turn_id for h in hits[:5]} & set(probe["ev"]))
    assert found[True] >= found[False] >= 8, found
