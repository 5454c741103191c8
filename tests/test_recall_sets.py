"""Acceptance 1 of issue 10: on every shared set the shipped ranking's R@5 and MRR are at least the vector lane's.

Both are computed here, in the same run, on the same database and model: seed-probe, zh-dev, zh-dev2
and MADial-Bench zh (the benchmark's recall definition). Skips without ../shared/evaldata.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from engine.memory.importer import load_history_turns
from engine.memory.ingest import TurnInput, record_turns_bulk
from engine.memory.madial import madial_query, madial_rows
from engine.memory.recall import params_from_settings, recall
from tests.memory_helpers import EVALDATA, ON, SETTINGS, embedder, fresh_db

pytestmark = pytest.mark.slow
NOW = 1796083200.0  # 2026-12-01T00:00Z, after every set's last turn
SHIPPED = params_from_settings(SETTINGS)
VECTOR_ONLY = replace(SHIPPED, text_weight=0.0, min_score=0.0, use_decay=False, use_mmr=False, use_importance=False,
                      use_newer=False, use_small_talk=False, use_time=False, use_lexicon=False)


class QueryCache:
    """The test's embedder: each query is embedded once for both rankings (the vectors are the same)."""

    def __init__(self, base: Any):
        self.base, self.name, self.dim = base, base.name, base.dim
        self._known: dict[str, np.ndarray] = {}

    def embed_passages(self, texts):
        return self.base.embed_passages(texts)

    def embed_queries(self, texts):
        missing = [t for t in texts if t not in self._known]
        if missing:
            self._known.update(zip(missing, self.base.embed_queries(missing), strict=True))
        return np.stack([self._known[t] for t in texts])


def measure(conn, emb, cases: list[tuple[str, list[str]]], definition: str) -> dict[str, dict[str, float]]:
    out = {}
    for label, params in (("vector_only", VECTOR_ONLY), ("shipped", SHIPPED)):
        r5 = mrr = 0.0
        for query, ev in cases:
            ranked = [h.turn_id for h in recall(conn, emb, query, settings=SETTINGS, switches=ON, now=NOW, k=10,
                                                 params=params).hits]
            r5 += len(set(ranked[:5]) & set(ev)) / (min(5, len(ev)) if definition == "probe" else len(ev))
            mrr += next((1.0 / (i + 1) for i, t in enumerate(ranked) if t in ev), 0.0)
        out[label] = {"R@5": r5 / len(cases), "MRR": mrr / len(cases)}
    return out


@pytest.mark.parametrize("name", ["seed-probe", "zh-dev", "zh-dev2"])
def test_shipped_is_at_least_the_vector_lane_on_probe_sets(tmp_path, name):
    folder = EVALDATA / name
    if not folder.is_dir():
        pytest.skip(f"needs ../shared/evaldata/{name}")
    emb = QueryCache(embedder())
    conn = fresh_db(tmp_path / "anima.db")
    record_turns_bulk(conn, emb, load_history_turns(folder / "history.jsonl"), now=NOW)
    probes = [p for p in json.loads((folder / "probes.json").read_text(encoding="utf-8")) if p["ev"]]
    got = measure(conn, emb, [(p["q"], p["ev"]) for p in probes], "probe")
    assert got["shipped"]["R@5"] >= got["vector_only"]["R@5"] - 1e-9, got
    assert got["shipped"]["MRR"] >= got["vector_only"]["MRR"] - 1e-9, got


def test_shipped_is_at_least_the_vector_lane_on_madial_zh(tmp_path):
    folder = EVALDATA / "madial-bench"
    if not folder.is_dir():
        pytest.skip("needs ../shared/evaldata/madial-bench")
    emb = QueryCache(embedder())
    dialogues, memories = madial_rows(folder)
    conns = {}
    for user_id in sorted({m["user-id"] for m in memories.values()}):
        conn = fresh_db(tmp_path / f"u{user_id}.db")
        record_turns_bulk(conn, emb, [TurnInput(turn_id=str(m["id"]), user=m["event"], companion=None,
                                                ts_iso=m["time"] + "T12:00:00+08:00")
                                      for m in memories.values() if m["user-id"] == user_id], now=NOW)
        conns[user_id] = conn
    totals = {"vector_only": {"R@5": 0.0, "MRR": 0.0}, "shipped": {"R@5": 0.0, "MRR": 0.0}}
    for user_id, conn in conns.items():
        cases = [(madial_query(d), [str(i) for i in d["relevant-id"]]) for d in dialogues if d["user-id"] == user_id]
        if not cases:
            continue
        for label, scores in measure(conn, emb, cases, "madial").items():
            for key, value in scores.items():
                totals[label][key] += value * len(cases) / len(dialogues)
    assert totals["shipped"]["R@5"] >= totals["vector_only"]["R@5"] - 1e-9, totals
    assert totals["shipped"]["MRR"] >= totals["vector_only"]["MRR"] - 1e-9, totals
