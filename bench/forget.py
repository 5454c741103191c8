"""Bench `anima forget`: ms to forget one turn, and a range, over N synthetic turns; prints one JSON object.

Usage: .venv/bin/python bench/forget.py [--turns 20000] [--repeats 5]
Each turn is a user message and a reply with real FTS tokens and a random unit vector in both vector
tables (no embedder: the numbers measure the forget transaction, the FTS5 optimize that rewrites the
whole keyword index, and the TRUNCATE checkpoint). The optimize dominates and grows with the history:
that is the price of "no segment keeps the old terms".
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

from engine.memory import forget as forgetting  # noqa: E402
from engine.memory.ingest import TurnInput, record_turns_bulk  # noqa: E402
from engine.store import connect, migrate  # noqa: E402

WORDS = ["芝麻", "上班", "天气", "猫", "医院", "夜班", "火锅", "地铁", "周末", "爬山", "妈妈", "电影", "咖啡", "下雨"]


class RandomEmbedder:
    name = "bench-random-384"
    dim = 384

    def __init__(self, seed: int = 7):
        self.rng = np.random.default_rng(seed)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        vecs = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)

    embed_queries = embed_passages


def build(path: Path, n: int) -> object:
    conn = connect(path)
    migrate(conn, now=0)
    rng = np.random.default_rng(3)
    turns = []
    for i in range(n):
        words = "，".join(rng.choice(WORDS, 4))
        turns.append(TurnInput(f"t{i:06d}", f"第{i}天：{words}", f"嗯，{words}", "2026-01-01T00:00:00+08:00"))
    record_turns_bulk(conn, RandomEmbedder(), turns, 0.0, batch=512)
    return conn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        conn = build(path, args.turns)
        build_s = time.perf_counter() - started
        one = []
        for k in range(args.repeats):
            start = time.perf_counter()
            report = forgetting.forget(conn, forgetting.selection(turn_id=f"t{k * 97:06d}"), 1.0)
            one.append((time.perf_counter() - start) * 1000)
            assert report.messages == 2
        start = time.perf_counter()
        ranged = forgetting.forget(conn, forgetting.selection(everything=True), 2.0)
        all_ms = (time.perf_counter() - start) * 1000
        size = path.stat().st_size
        conn.close()
    print(json.dumps({"turns": args.turns, "build_s": round(build_s, 1), "forget_one_median_ms": round(statistics.median(one), 1),
                      "forget_one_max_ms": round(max(one), 1), "forget_all_ms": round(all_ms, 1),
                      "forget_all_turns": len(ranged.turn_ids), "wal_truncated": ranged.wal_truncated,
                      "file_bytes_after_all": size}))


if __name__ == "__main__":
    main()
