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
    result = recall(conn, embedder(), line, settings=SETTINGS, controls=ON, now=NOW)
    assert result.context == "" and result.hits == []


@pytest.mark.parametrize("probe", [p for p in PROBES if p.get("must_not")], ids=lambda p: p["q"])
def test_canaries_of_her_untold_life_never_show(conn, probe):
    result = recall(conn, embedder(), probe["q"], settings=SETTINGS, controls=ON, now=NOW)
    shown = json.dumps([result.to_json()["hits"], result.context], ensure_ascii=False)
    assert not any(canary in shown for canary in probe["must_not"])
