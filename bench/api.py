"""API latency under load: p50/p95 of POST /v1/context and POST /v1/turns, 20 concurrent clients, 10k memories; JSON out.

Builds (or reuses, --db) a companion with N memories (N/2 turns of generated Chinese chat, embedded
with the configured model in batches), starts the real daemon (`python -m daemon run`) on it, and
runs C clients over the Unix socket for D seconds. Each client alternates context -> turn in a closed
loop (no think time unless --think-ms), the way a chat server calls anima once before and once after
each reply. Prints one JSON object: per endpoint count, p50/p95/p99/max in ms, throughput, errors.

Usage: python bench/api.py [--duration 30] [--clients 20] [--memories 10000] [--db PATH] [--think-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
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


async def load(sock: str, clients: int, duration: float, think_ms: float) -> dict[str, Any]:
    latencies: dict[str, list[float]] = {"context": [], "turns": []}
    errors = {"context": 0, "turns": 0}
    samples: dict[str, str] = {}
    connector = aiohttp.UnixConnector(path=sock, limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        deadline = time.monotonic() + duration

        run = os.urandom(3).hex()  # fresh turn ids every run: replays would be cheap no-ops

        async def client(n: int) -> None:
            rng = random.Random(1000 + n)
            i = 0
            while time.monotonic() < deadline:
                for endpoint in ("context", "turns"):
                    if endpoint == "context":
                        body: dict[str, Any] = {"query": rng.choice(QUERIES) + rng.choice(TAILS), "turn_id": f"b{run}-{n}-{i}"}
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
                    else:
                        errors[endpoint] += 1
                    if think_ms:
                        await asyncio.sleep(rng.uniform(0.5, 1.5) * think_ms / 1000)
                i += 1

        began = time.monotonic()
        await asyncio.gather(*(client(n) for n in range(clients)))
        took = time.monotonic() - began
    out: dict[str, Any] = {name: summary(values, took, errors[name]) for name, values in latencies.items()}
    if samples:
        out["error_samples"] = samples
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load (default 30)")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--db", help="reuse (or build once into) this database file")
    parser.add_argument("--think-ms", type=float, default=0.0, help="mean pause of each client between calls")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=on|off",
                        help="set a life_control switch before the load (e.g. memory_facts=off)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="anima-bench-"))
    db = Path(args.db) if args.db else work / "bench.db"
    built_s = 0.0
    if not db.exists():
        print(f"building {args.memories} memories into {db} ...", file=sys.stderr)
        began = time.time()
        build_db(db, args.memories)
        built_s = time.time() - began
    config = work / "config.toml"
    config.write_text("[log]\nlevel = \"warning\"\n", encoding="utf-8")
    sock = str(work / "a.sock")
    config.write_text(f"[log]\nlevel = \"warning\"\n[api]\nsocket_path = \"{sock}\"\n", encoding="utf-8")
    log = open(work / "daemon.log", "w")  # noqa: SIM115 - closed below
    daemon = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                              stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ})
    try:
        asyncio.run(wait_for_socket(sock, 120))
        asyncio.run(set_controls(sock, args.set))
        asyncio.run(load(sock, 2, 2.0, 0))  # warm-up: model, page cache
        results = asyncio.run(load(sock, args.clients, args.duration, args.think_ms))
    finally:
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=30)
        log.close()
    from engine.store import connect

    conn = connect(db, readonly=True)
    memories = conn.execute("SELECT count(*) FROM mem_episodic").fetchone()[0]
    conn.close()
    out = {
        "clients": args.clients, "duration_s": args.duration, "think_ms": args.think_ms, "set": args.set,
        "memories_at_end": memories, "cpus": os.cpu_count(), "build_s": round(built_s, 1),
        "daemon_exit": code, **results,
        "targets": {"context_p95_ms": 80, "turns_p95_ms": 50},
    }
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
