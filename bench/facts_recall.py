"""Bench `fact_hits` (facts as recall hits): median ms per query over N synthetic facts; prints one JSON object.

Usage: .venv/bin/python bench/facts_recall.py [--facts 4400] [--queries 50] [--dim 384]
Facts are random unit vectors with a real statement row each (a tenth of them superseded), so
the numbers measure the scan and the cache, not the embedder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402, F401, I001  (before numpy: its CPU thread policy)
import numpy as np  # noqa: E402

from engine.consolidate.facts_recall import fact_hits  # noqa: E402
from engine.store import connect, migrate  # noqa: E402
from engine.store.connect import transaction  # noqa: E402
from engine.store.queries import q  # noqa: E402


def build(path: Path, n: int, dim: int, rng: np.random.Generator) -> tuple[object, np.ndarray]:
    conn = connect(path)
    migrate(conn, now=0)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with transaction(conn):
        for i in range(n):
            fid = conn.execute(q("insert_fact"), {
                "subject": "user", "key": "none", "statement": f"2026-07-01 用户说：第{i}条事实",
                "valid_from": 1000.0 + i, "valid_to": 2_000_000.0 if i % 10 == 0 else None,
                "recorded_at": 0.0, "superseded_by": None, "evidence_json": "[]", "importance": 5.0,
                "origin": "bench"}).fetchone()[0]
            conn.execute(q("insert_fact_vec"), {"fact_id": fid, "model": "bench", "embedding": vecs[i].tobytes()})
    return conn, vecs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=4400)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        conn, vecs = build(Path(tmp) / "bench.db", args.facts, args.dim, rng)
        # Queries near real facts, so some clear the score floor and the hit path (evidence re-read) runs too.
        targets = rng.integers(0, args.facts, args.queries)
        queries = vecs[targets] + 0.02 * rng.standard_normal((args.queries, args.dim)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        first = time.perf_counter()
        fact_hits(conn, queries[0], "q", k=8, now=3e6)
        first_ms = (time.perf_counter() - first) * 1000
        times, hits = [], 0
        for query in queries:
            start = time.perf_counter()
            hits += len(fact_hits(conn, query, "q", k=8, now=3e6))
            times.append((time.perf_counter() - start) * 1000)
        as_of = []
        for query in queries[:10]:
            start = time.perf_counter()
            fact_hits(conn, query, "q", k=8, now=3e6, as_of=5000.0)
            as_of.append((time.perf_counter() - start) * 1000)
        conn.close()
    print(json.dumps({"facts": args.facts, "dim": args.dim, "queries": args.queries,
                      "first_call_ms": round(first_ms, 2), "median_ms": round(statistics.median(times), 3),
                      "p95_ms": round(sorted(times)[int(0.95 * len(times)) - 1], 3),
                      "as_of_median_ms": round(statistics.median(as_of), 3), "hits": hits}))


if __name__ == "__main__":
    main()
