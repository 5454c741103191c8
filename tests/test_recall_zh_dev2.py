"""zh-dev2 (116 turns of one user): small talk gets an empty context (issue 10, acceptance 5); canaries never show."""

import json

import pytest

from engine.memory.importer import import_history
from engine.memory.recall import recall
from tests.memory_helpers import ON, SETTINGS, add_life_event, embedder, fresh_db, require_evaldata

ZH2 = require_evaldata("zh-dev2")
PROBES = json.loads((ZH2 / "probes.json").read_text(encoding="utf-8"))
UNTOLD = json.loads((ZH2 / "untold_life.json").read_text(encoding="utf-8"))
NOW = 1796083200.0


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    c = fresh_db(tmp_path_factory.mktemp("zh2") / "anima.db")
    import_history(c, embedder(), ZH2 / "history.jsonl", NOW)
    for text in UNTOLD:
        add_life_event(c, text if isinstance(text, str) else text["text"], NOW - 86400, told=0)
    return c


@pytest.mark.parametrize("line", ["今天天气不错", "哈哈哈哈", "晚安", "好的", "嗯嗯知道了"])
def test_small_talk_with_no_related_memory_gets_an_empty_context(conn, line):
    result = recall(conn, embedder(), line, settings=SETTINGS, switches=ON, now=NOW)
    assert result.context == "" and result.hits == []


@pytest.mark.parametrize("probe", [p for p in PROBES if p.get("must_not")], ids=lambda p: p["q"])
def test_canaries_of_her_untold_life_never_show(conn, probe):
    result = recall(conn, embedder(), probe["q"], settings=SETTINGS, switches=ON, now=NOW)
    shown = json.dumps([result.to_json()["hits"], result.context], ensure_ascii=False)
    assert not any(canary in shown for canary in probe["must_not"])


def test_a_question_about_the_user_himself_is_never_small_talk(conn):
    # "我是干什么的" is nearer (0.91) to the background line "你在做什么呢" than to any memory: the floor alone
    # returned nothing. The job turns (zh-dev2's answer to "我一直干的是哪一行") must come back.
    result = recall(conn, embedder(), "我是干什么的", settings=SETTINGS, switches=ON, now=NOW)
    assert {"a001", "a076", "a052"} & {h.turn_id for h in result.hits[:5]}, [h.turn_id for h in result.hits]
    assert result.mode == "hybrid"


def newer_first(conn, params=None):
    """The update probes (`newer_than`) whose newer evidence ranks above the stale turn in the top 20."""
    ok = 0
    for probe in [p for p in PROBES if p.get("newer_than")]:
        hits = recall(conn, embedder(), probe["q"], settings=SETTINGS, switches=ON, now=NOW, k=20, params=params).hits
        ranked = list(dict.fromkeys(h.turn_id for h in hits))
        ev = min((ranked.index(t) for t in probe["ev"] if t in ranked), default=99)
        ok += ev < (ranked.index(probe["newer_than"]) if probe["newer_than"] in ranked else 99)
    return ok


def test_updates_outrank_their_stale_turn_and_the_pool_rule_is_why(conn):
    """Issue 27 acceptance 1: >= 11 of the 12 update probes; without the whole-pool reach of supersession
    "我现在每天上班咋去" loses (its update, the 36th hit, shares 上班 with the stale 6th)."""
    from dataclasses import replace

    from engine.memory.recall import params_from_settings

    assert newer_first(conn) >= 11
    assert newer_first(conn, replace(params_from_settings(SETTINGS), use_newer_pool=False)) < newer_first(conn)
