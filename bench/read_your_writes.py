"""Read-your-writes: is a just-posted turn found by a paraphrase in the very next /v1/context, and what it costs; JSON out.

One chat on the real daemon over its Unix socket: post a turn, then at once ask /v1/context with a
paraphrase that shares no keyword with it, and check that the new turn is cited. Run side by side
with `[memory] context_embed_pending = 0` (the context request embeds nothing itself: the turn is
found by meaning only if the background indexer got there first) and with the shipped setting.
Reported per setting: cited rate and context p50/p95 right after a turn, and the same after a pause
(the indexer has caught up, so read-your-writes has nothing to do: the fast path; its cited rate is
what ranking alone gives on that history, the ceiling for the first).

With --db the chat runs on a copy of that database (e.g. bench/api.py's 10k-memory one), so the
indexer may also have a backlog; without it, on a new empty companion.

Usage: python bench/read_your_writes.py [--rounds 12] [--db PATH] [--pending 0,1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
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

from bench.api import percentile, wait_for_socket  # noqa: E402

CST = timezone(timedelta(hours=8))
# (what the user said, a later question about it sharing no keyword with it)
PAIRS = [
    ("我下个月要搬去成都工作了", "打算换到哪座城市上班"),
    ("昨天晚上我发烧到三十九度", "我前几天生病了吗"),
    ("我女儿今年考上了北京大学", "孩子念哪所学校"),
    ("周末我和老公去看了一场话剧", "上回跟丈夫欣赏的表演叫什么"),
    ("我最近迷上了做陶艺", "新的爱好是什么"),
    ("我把车卖了，以后坐地铁通勤", "现在每天怎么去公司"),
    ("我报了一个日语班，每周六上课", "周末去学哪门外语"),
    ("我爸上个月做了心脏手术", "父亲身体怎么样了"),
    ("我在阳台种了一排番茄", "家里栽的蔬菜长得好吗"),
    ("我们公司要裁员一半的人", "单位最近有什么变动"),
    ("我和男朋友分手了", "感情上出了什么事"),
    ("我买了一台二手钢琴", "新添的乐器是什么"),
]


def shares_no_keyword(text: str, question: str) -> bool:
    from engine.memory.tokens import fts_query, fts_tokens

    terms = set(fts_tokens(text).split())
    asked = {t.strip('"') for t in fts_query(question).split(" OR ")}
    return not terms & asked


async def chat(sock: str, rounds: int, pause_s: float) -> dict[str, Any]:
    after_turn: list[float] = []
    after_pause: list[float] = []
    cited = 0
    cited_later = 0
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as session:

        async def post(path: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
            started = time.perf_counter()
            async with session.post(f"http://anima{path}", json=body) as r:
                payload = await r.json()
                if r.status != 200:
                    raise SystemExit(f"{path}: {r.status} {payload}")
            return (time.perf_counter() - started) * 1000, payload

        for i in range(rounds):
            text, question = PAIRS[i % len(PAIRS)]
            turn_id = f"ryw-{os.urandom(3).hex()}-{i}"
            await post("/v1/turns", {"turn_id": turn_id, "user": f"{text}（{i}）", "companion": "嗯嗯，记住了",
                                     "ts": datetime.now(CST).isoformat(timespec="seconds")})
            ms, ctx = await post("/v1/context", {"query": question, "turn_id": f"{turn_id}-next"})
            after_turn.append(ms)
            cited += turn_id in ctx["context"]
            await asyncio.sleep(pause_s)  # the user reads and types: the indexer catches up
            ms, later = await post("/v1/context", {"query": question, "turn_id": f"{turn_id}-later"})
            after_pause.append(ms)
            cited_later += turn_id in later["context"]
    return {"rounds": rounds, "cited_right_after_turn": round(cited / rounds, 3),
            "cited_after_pause": round(cited_later / rounds, 3),
            "context_after_turn_ms": {"p50": round(percentile(after_turn, 50), 1),
                                      "p95": round(percentile(after_turn, 95), 1)},
            "context_after_pause_ms": {"p50": round(percentile(after_pause, 50), 1),
                                       "p95": round(percentile(after_pause, 95), 1)}}


def run_setting(pending: int, base_db: Path | None, work: Path, rounds: int, pause_s: float) -> dict[str, Any]:
    folder = work / f"pending-{pending}"
    folder.mkdir()
    db = folder / "anima.db"
    if base_db is not None:
        shutil.copyfile(base_db, db)
    sock = str(folder / "a.sock")
    config = folder / "config.toml"
    config.write_text(f"[log]\nlevel = \"warning\"\n[api]\nsocket_path = \"{sock}\"\n"
                      f"[memory]\ncontext_embed_pending = {pending}\n", encoding="utf-8")
    log = open(folder / "daemon.log", "w")  # noqa: SIM115 - closed below
    daemon = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                              stdout=log, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ})
    try:
        asyncio.run(wait_for_socket(sock, 120))
        return asyncio.run(chat(sock, rounds, pause_s))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        log.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=len(PAIRS),
                        help=f"turns per setting (default {len(PAIRS)}: each pair once; repeats compete with their earlier copies)")
    parser.add_argument("--db", help="run on a copy of this database (default: a new, empty companion)")
    parser.add_argument("--pending", default="0,1", help="comma-separated [memory] context_embed_pending values")
    parser.add_argument("--pause-s", type=float, default=1.5, help="think time before the second context")
    args = parser.parse_args()
    for text, question in PAIRS:
        if not shares_no_keyword(text, question):
            raise SystemExit(f"bench pair shares a keyword: {question!r}")
    work = Path(tempfile.mkdtemp(prefix="anima-ryw-"))
    out: dict[str, Any] = {"rounds": args.rounds, "db": args.db, "cpus": os.cpu_count(),
                           "load_avg_at_start": round(os.getloadavg()[0], 2)}
    for value in [int(v) for v in args.pending.split(",") if v.strip()]:
        out[f"context_embed_pending={value}"] = run_setting(value, Path(args.db) if args.db else None, work,
                                                            args.rounds, args.pause_s)
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
