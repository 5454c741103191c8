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
