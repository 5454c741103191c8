"""API latency under load, two load shapes side by side: p50/p95 per endpoint, throughput, daemon RSS and CPU%; JSON out.

Builds (or reuses, --db) a companion with N memories (N/2 turns of generated Chinese chat, embedded
with the configured model in batches). For each shape it starts the real daemon (`python -m daemon
run`) on a fresh copy of that database and runs C clients over the Unix socket for D seconds:

- closed: each client alternates context -> turns back to back, no think time (the saturation case:
  how much the daemon can take, and what latency costs at that rate);
- paced: each client is a chat user: context -> share -> turns, then a think time (uniform 0.5-1.5 x
  --think-s, default 2 s) before its next message (what 20 people chatting at once look like).

Turns are acknowledged before their vectors exist (the memory part's indexer embeds them in the
background); after the load each shape also reports the backlog and how fast the indexer drains
it (`vectors`: GET /v1/health's vectors_pending, polled for at most --drain-wait-s). Targets: context p95 <= 80 ms,
turns p95 <= 50 ms.

--inline-embedding also runs every shape with the turns route embedding inside the request (the
behaviour before vectors were deferred), as `<shape>_inline`, for a before/after in one run.

--trees A,B runs the daemon of each source tree in turn (A B A B ..., --rounds), each on a fresh copy of
the same database, for a before/after of a code change in one run: on a shared VM whose load changes
by the minute, separate runs do not compare. Reported per tree: each round, and the median over
rounds of context/turns p50 and p95 and daemon RSS.

Usage: python bench/api.py [--seconds 30] [--clients 20] [--memories 10000] [--db PATH] [--think-s 2]
       [--shapes closed,paced] [--inline-embedding] [--trees PATH,PATH [--rounds 3]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CST = timezone(timedelta(hours=8))
SUBJECTS = ["我", "我妈", "我同事", "我朋友小李", "芝麻", "我室友", "我老板", "我表妹"]
EVENTS = ["今天去了趟超市买了草莓", "下班路上下起了大雨", "周末想去西湖边骑车", "最近在学做蛋糕", "晚上看了一部老电影",
          "早上起晚了差点迟到", "准备下个月去成都旅游", "在读一本关于宇宙的书", "中午吃了一碗牛肉面", "感冒了嗓子好疼",
          "换了一份新工作", "搬家到了城东", "报名了游泳课", "养的多肉终于开花了", "和家里人吵了一架", "拿到了驾照"]
TAILS = ["，挺开心的", "，有点累", "，你觉得怎么样？", "，想跟你说说", "。", "，好烦啊", "，哈哈哈"]
REPLIES = ["真好呀", "辛苦了，抱抱", "听起来很有意思", "要注意身体哦", "我也想去", "然后呢？", "慢慢来，不着急"]
QUERIES = ["你还记得我说过的旅游计划吗", "上次那个蛋糕做成功了吗", "芝麻最近怎么样", "你记得我搬家的事吗", "我感冒好了",
           "新工作适应了吗", "下雨那天你还记得吗", "我们聊过的那本书", "游泳课上得怎么样", "多肉又开花了"]


def sentence(rng: random.Random) -> str:
    return rng.choice(SUBJECTS) + rng.choice(EVENTS) + rng.choice(TAILS)


def build_db(path: Path, memories: int) -> None:
    from engine.companion import create_companion
    from engine.memory.embed import make_embedder
    from engine.memory.ingest import TurnInput, record_turns_bulk
    from engine.settings import Settings
    from engine.store import connect, migrate

    settings = Settings()
    rng = random.Random(7)
    conn = connect(path)
    migrate(conn)
    now = time.time()
    create_companion(conn, name="小安", birth_local="1998-04-12 09:30", tz="Asia/Shanghai", place="杭州", sect=2, now=now)
    start = now - 180 * 86400
    turns = []
    for i in range(memories // 2):
        ts = datetime.fromtimestamp(start + i * (180 * 86400 / (memories / 2)), CST).isoformat(timespec="seconds")
        turns.append(TurnInput(f"hist-{i}", sentence(rng) + f"（{i}）", rng.choice(REPLIES) + f"（{i}）", ts))
    embedder = make_embedder(settings.memory)
    started = time.time()

    def progress(done: int, total: int) -> None:
        if done % 2000 < 64 or done == total:
            print(f"  embedded {done}/{total} ({time.time() - started:.0f} s)", file=sys.stderr)

    record_turns_bulk(conn, embedder, turns, now, progress=progress)
    conn.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def summary(values: list[float], duration: float, errors: int) -> dict[str, Any]:
    return {"count": len(values), "errors": errors, "rps": round(len(values) / duration, 1),
            "p50_ms": round(percentile(values, 50), 1), "p95_ms": round(percentile(values, 95), 1),
            "p99_ms": round(percentile(values, 99), 1), "max_ms": round(max(values), 1) if values else None,
            "mean_ms": round(statistics.fmean(values), 1) if values else None}


async def wait_for_socket(sock: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as s, \
                    s.get("http://anima/v1/health") as r:
                if r.status == 200:
                    return
        except (aiohttp.ClientError, FileNotFoundError, ConnectionRefusedError):
            pass
        await asyncio.sleep(0.2)
    raise SystemExit(f"daemon did not answer on {sock} within {timeout} s")


async def set_controls(sock: str, assignments: list[str]) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as session:
        for item in assignments:
            key, _, value = item.partition("=")
            async with session.put(f"http://anima/v1/control/{key}", json={"value": value in ("on", "true", "1")}) as r:
                if r.status != 200:
                    raise SystemExit(f"--set {item}: {r.status} {await r.text()}")


class DaemonMeter:
    """CPU% and RSS of the daemon process from /proc, sampled over the load window."""

    def __init__(self, pid: int):
        self.pid = pid
        self.ticks = os.sysconf("SC_CLK_TCK")
        self.rss_mb: list[float] = []
        self.cpu_start = 0.0
        self.wall_start = 0.0

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.ticks  # utime + stime

    def rss(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def start(self) -> None:
        self.cpu_start, self.wall_start = self.cpu_s(), time.monotonic()

    async def sample(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.rss_mb.append(self.rss())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    def result(self) -> dict[str, Any]:
        wall = time.monotonic() - self.wall_start
        return {"cpu_percent": round(100 * (self.cpu_s() - self.cpu_start) / wall, 1),
                "rss_mb_max": round(max(self.rss_mb), 1) if self.rss_mb else None,
                "rss_mb_end": round(self.rss(), 1)}


async def vectors_pending(session: aiohttp.ClientSession) -> int:
    async with session.get("http://anima/v1/health") as r:
        return int((await r.json()).get("vectors_pending", 0))


async def load(sock: str, clients: int, duration: float, shape: str, think_s: float,
               meter: DaemonMeter | None = None, drain_wait_s: float = 30.0) -> dict[str, Any]:
    endpoints = ("context", "share", "turns") if shape == "paced" else ("context", "turns")
    latencies: dict[str, list[float]] = {name: [] for name in endpoints}
    slowest: dict[str, list[tuple[float, float]]] = {name: [] for name in endpoints}  # (ms, s into the load)
    errors = dict.fromkeys(endpoints, 0)
    samples: dict[str, str] = {}
    connector = aiohttp.UnixConnector(path=sock, limit=clients + 1)
    async with aiohttp.ClientSession(connector=connector) as session:
        deadline = time.monotonic() + duration
        run = os.urandom(3).hex()  # fresh turn ids every run: replays would be cheap no-ops

        async def client(n: int) -> None:
            rng = random.Random(1000 + n)
            i = 0
            if shape == "paced":
                await asyncio.sleep(rng.uniform(0, think_s))  # users do not all press enter at once
            while time.monotonic() < deadline:
                query = rng.choice(QUERIES) + rng.choice(TAILS)
                for endpoint in endpoints:
                    body: dict[str, Any]
                    if endpoint == "context":
                        body = {"query": query, "turn_id": f"b{run}-{n}-{i}"}
                    elif endpoint == "share":
                        body = {"turn_id": f"b{run}-{n}-{i}", "query": query}
                    else:
                        body = {"turn_id": f"b{run}-{n}-{i}", "user": sentence(rng), "companion": rng.choice(REPLIES),
                                "ts": datetime.now(CST).isoformat(timespec="seconds")}
                    started = time.perf_counter()
                    async with session.post(f"http://anima/v1/{endpoint}", json=body) as r:
                        payload = await r.read()
                        ok = r.status == 200
                        if not ok:
                            samples.setdefault(endpoint, f"{r.status} {payload[:200].decode(errors='replace')}")
                    elapsed = (time.perf_counter() - started) * 1000
                    if ok:
                        latencies[endpoint].append(elapsed)
                        slowest[endpoint].append((round(elapsed, 1), round(started - began_perf, 2)))
                    else:
                        errors[endpoint] += 1
                if shape == "paced":
                    await asyncio.sleep(rng.uniform(0.5, 1.5) * think_s)
                i += 1

        stop = asyncio.Event()
        sampler = None
        if meter is not None:
            meter.start()
            sampler = asyncio.create_task(meter.sample(stop))
        began = time.monotonic()
        began_perf = time.perf_counter()
        await asyncio.gather(*(client(n) for n in range(clients)))
        took = time.monotonic() - began
        stop.set()
        out: dict[str, Any] = {name: summary(values, took, errors[name]) for name, values in latencies.items()}
        out["turns_per_s"] = out["turns"]["rps"]
        # When the slowest requests started (s into the load): stalls that line up across endpoints,
        # or with the 15 s heartbeat, point at their cause.
        out["slowest"] = {name: sorted(values, reverse=True)[:5] for name, values in slowest.items()}
        if meter is not None and sampler is not None:
            await sampler
            out["daemon"] = meter.result()
            pending = left = await vectors_pending(session)
            drain_started = time.monotonic()
            while left > 0 and time.monotonic() - drain_started < drain_wait_s:
                await asyncio.sleep(0.2)
                left = await vectors_pending(session)
            waited = time.monotonic() - drain_started
            out["vectors"] = {"pending_at_end": pending, "pending_after_wait": left, "waited_s": round(waited, 1),
                              "indexed_per_s_after_load": round((pending - left) / waited, 1) if waited > 0.5 else None}
    if samples:
        out["error_samples"] = samples
    return out


# The daemon with its vector indexer hidden from the API: POST /v1/turns then embeds inline (the old path).
INLINE_LAUNCH = """
import sys
import daemon.memory_component as memory
started = memory.MemoryComponent.start
async def start(self, ctx):
    await started(self, ctx)
    ctx.vector_indexer = None
memory.MemoryComponent.start = start
from daemon.cli import main
sys.exit(main())
"""


def run_shape(shape: str, base_db: Path, work: Path, args: argparse.Namespace, inline: bool = False,
              tree: Path = REPO, label: str = "") -> dict[str, Any]:
    """A fresh copy of the base database, a fresh daemon (of `tree`'s code), warm-up, then the load."""
    folder = work / (shape + ("_inline" if inline else "") + label)
    folder.mkdir()
    db = folder / "anima.db"
    shutil.copyfile(base_db, db)
    sock = str(folder / "a.sock")
    config = folder / "config.toml"
    memory = "".join(f"{item}\n" for item in args.memory)  # --memory KEY=VALUE, written as TOML as given
    config.write_text(f"[log]\nlevel = \"warning\"\n[api]\nsocket_path = \"{sock}\"\n"
                      + (f"[memory]\n{memory}" if memory else ""), encoding="utf-8")
    log = open(folder / "daemon.log", "w")  # noqa: SIM115 - closed below
    launch = ["-c", INLINE_LAUNCH] if inline else ["-m", "daemon"]
    env = {**os.environ, "PYTHONPATH": str(tree)} if tree != REPO else {**os.environ}
    daemon = subprocess.Popen([sys.executable, *launch, "--config", str(config), "--db", str(db), "run"],
                              stdout=log, stderr=subprocess.STDOUT, cwd=tree, env=env)
    try:
        asyncio.run(wait_for_socket(sock, 120))
        asyncio.run(set_controls(sock, args.set))
        asyncio.run(load(sock, 2, 2.0, "closed", 0))  # warm-up: model, page cache
        results = asyncio.run(load(sock, args.clients, args.seconds, shape, args.think_s, DaemonMeter(daemon.pid),
                                   args.drain_wait_s))
    finally:
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=60)
        log.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)  # a copy of the base database, tens of MB
    return {**results, "daemon_exit": code}


def compare_trees(shapes: list[str], db: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Each shape on each tree's daemon in turn, A B A B, every run on a fresh copy of `db`."""
    trees = [Path(t.strip()).resolve() for t in args.trees.split(",") if t.strip()]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {str(t): {shape: [] for shape in shapes} for t in trees}
    for round_no in range(args.rounds):
        for shape in shapes:
            for i, tree in enumerate(trees):
                print(f"round {round_no + 1}/{args.rounds} {shape}: {tree}", file=sys.stderr)
                result = run_shape(shape, db, work, args, tree=tree, label=f"_t{i}_r{round_no}")
                runs[str(tree)][shape].append(result)

    def med(results: list[dict[str, Any]], *path: str) -> float | None:
        values = []
        for r in results:
            value: Any = r
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, int | float):
                values.append(float(value))
        return round(statistics.median(values), 1) if values else None

    summary = {tree: {shape: {
        "context_p50_ms": med(results, "context", "p50_ms"), "context_p95_ms": med(results, "context", "p95_ms"),
        "turns_p50_ms": med(results, "turns", "p50_ms"), "turns_p95_ms": med(results, "turns", "p95_ms"),
        "rss_mb_max": med(results, "daemon", "rss_mb_max"), "cpu_percent": med(results, "daemon", "cpu_percent"),
        "context_p95_ms_rounds": [r["context"]["p95_ms"] for r in results]}
        for shape, results in by_shape.items()} for tree, by_shape in runs.items()}
    return {"order": "alternating, A B A B", "rounds": args.rounds, "summary_median_over_rounds": summary,
            "runs": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", "--duration", dest="seconds", type=float, default=30.0,
                        help="seconds of load per shape (default 30)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--memory", action="append", default=[], metavar="KEY=VALUE",
                        help="a [memory] setting for the daemon, as a TOML line (e.g. context_embed_pending=0)")
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--db", help="reuse (or build once into) this database file; each shape runs on a copy")
    parser.add_argument("--think-s", type=float, default=2.0, help="paced shape: mean think time between replies")
    parser.add_argument("--shapes", default="closed,paced", help="comma-separated: closed, paced")
    parser.add_argument("--drain-wait-s", type=float, default=30.0,
                        help="after the load, wait at most this long for the indexer to reach vectors_pending 0")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=on|off",
                        help="set a life_control switch before the load (e.g. memory_facts=off)")
    parser.add_argument("--trees", help="comma-separated source trees whose daemons run in turn (A/B)")
    parser.add_argument("--rounds", type=int, default=3, help="with --trees: alternating rounds per tree and shape")
    parser.add_argument("--inline-embedding", action="store_true",
                        help="also run each shape embedding turns inside the request (the old path), as <shape>_inline")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="anima-bench-"))
    db = Path(args.db) if args.db else work / "bench.db"
    built_s = 0.0
    if not db.exists():
        print(f"building {args.memories} memories into {db} ...", file=sys.stderr)
        began = time.time()
        build_db(db, args.memories)
        built_s = time.time() - began
    from engine.store import connect

    conn = connect(db, readonly=True)
    memories = conn.execute("SELECT count(*) FROM mem_episodic").fetchone()[0]
    conn.close()
    out: dict[str, Any] = {"clients": args.clients, "seconds": args.seconds, "think_s": args.think_s, "set": args.set, "memory": args.memory,
                           "memories_at_start": memories, "cpus": os.cpu_count(), "build_s": round(built_s, 1)}
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    for shape in shapes:
        if shape not in ("closed", "paced"):
            raise SystemExit(f"--shapes: unknown shape {shape!r} (expected closed, paced)")
    if args.trees:
        out["trees"] = compare_trees(shapes, db, work, args)
        out["targets"] = {"context_p95_ms": 80, "turns_p95_ms": 50}
        print(json.dumps(out, ensure_ascii=False))
        return 0
    for shape in shapes:
        out[shape] = run_shape(shape, db, work, args)
        if args.inline_embedding:
            out[f"{shape}_inline"] = run_shape(shape, db, work, args, inline=True)
    out["targets"] = {"context_p95_ms": 80, "turns_p95_ms": 50}
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
