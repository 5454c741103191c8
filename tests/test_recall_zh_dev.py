"""zh-dev regression: Recall@1 >= 11/13, Recall@5 >= 12/13, updates above stale turns, no must_not text anywhere.

The thresholds were 0.90 and 1.0 while data/query_intents.toml (written looking at these 13 probes)
shipped; issue 10 removed it. The probe it alone answered is "我是干什么的" (evidence: "三个大夜之后的腿…",
no shared word): e5-small ranks it 10th, and the question is nearer to generic chat than any memory
is, so the small-talk floor empties it. The lost point is reported, not hidden (see the lead's note).
"""

import json

import pytest

from engine.memory.importer import import_history
from engine.memory.recall import recall
from tests.memory_helpers import ON, SETTINGS, add_life_event, embedder, fresh_db, require_evaldata

ZH = require_evaldata("zh-dev")
PROBES = json.loads((ZH / "probes.json").read_text(encoding="utf-8"))
UNTOLD = json.loads((ZH / "untold_life.json").read_text(encoding="utf-8"))
# Query times: right after the last turn, the real 'now' of this project, and a year later.
NOWS = [1785340800.0, 1796083200.0, 1827619200.0]


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    c = fresh_db(tmp_path_factory.mktemp("zh") / "anima.db")
    import_history(c, embedder(), ZH / "history.jsonl", NOWS[0])
    for text in UNTOLD:
        add_life_event(c, text, NOWS[0], told=0)
    return c


def turns(c, query, now, k=10):
    return recall(c, embedder(), query, settings=SETTINGS, switches=ON, now=now, k=k)


@pytest.mark.parametrize("now", NOWS)
def test_recall_at_1_and_5(conn, now):
    with_ev = [p for p in PROBES if p["ev"]]
    at1 = at5 = 0.0
    for p in with_ev:
        ranked = [h.turn_id for h in turns(conn, p["q"], now).hits]
        at1 += ranked[:1][0] in p["ev"] if ranked else 0
        at5 += len(set(ranked[:5]) & set(p["ev"])) / min(5, len(p["ev"]))
    assert at1 >= 11
    assert at5 >= 12


@pytest.mark.parametrize("now", NOWS)
@pytest.mark.parametrize("probe", [p for p in PROBES if p.get("newer_than")], ids=lambda p: p["q"])
def test_update_ranks_above_stale_turn(conn, probe, now):
    ranked = [h.turn_id for h in turns(conn, probe["q"], now, k=20).hits]
    best_ev = min(ranked.index(t) for t in probe["ev"] if t in ranked)
    stale = ranked.index(probe["newer_than"]) if probe["newer_than"] in ranked else len(ranked)
    assert best_ev < stale


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p["q"])
def test_must_not_never_in_hits_or_context(conn, probe):
    result = turns(conn, probe["q"], NOWS[1])
    shown = json.dumps([result.to_json()["hits"], result.context], ensure_ascii=False)
    for canary in probe.get("must_not", []) + UNTOLD:
        assert canary not in shown
