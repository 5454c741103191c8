"""What the chat endpoint adds to a reply: the time before the upstream call, and the extra time to the first token; JSON out.

Builds (or reuses, --db) a companion with N memories (bench/api.py's generated Chinese chat, embedded with
the real model), starts the real daemon (`python -m daemon run`) on a copy with `[model] base_url` pointing
at a fake upstream in this process (aiohttp on loopback, answering at once), and sends chat requests over
the Unix socket one after another, each a new conversation turn (so each records a turn; before the next
request the bench waits until the memory indexer has embedded it, as it has by the time a user has typed):

- `before_upstream_ms`: from the client sending the request to the upstream receiving it: reading the
  request, embedding the recall query, recall over N memories, her state, the offer and the prompt
  (p50/p95; plain requests); split into `_one_message` and `_with_turns_before` (a last message shorter
  than SHORT_QUERY_CHARS is read with the two turns before it, so recall embeds the dialogue and each line);
- `first_token_extra_ms`: streamed requests, from the upstream writing its first chunk to the client
  reading the first content chunk: what relaying through anima adds to the time to first token;
- `first_token_total_ms`: client send to first content chunk (both of the above plus the upstream);
- `daemon_prepare_ms`: the same span measured inside the daemon (its `api.chat_replied` log line's
  prepare_ms: handler start to the upstream call), without this process's scheduling;
- `context_ms`: POST /v1/context for the same questions in the same run (the recall a front end pays
  without the chat endpoint), as the paired reference;
- `prepare_cpu_ms`: the CPU time of the same work (query embedding + prepare_chat) run in this process on a
  copy of the database: the figure that holds when the cores are shared with other work;
- the daemon's CPU seconds per request and its RSS at the end.
Both clocks are this process's perf_counter (client and fake upstream share it). Targets (issue 23, 2 cores):
before_upstream p95 <= 80 ms, first_token_extra p95 <= 20 ms.

`--query-threads 0,1` runs the daemon once per `[memory] query_embedding_threads` value (0: all cores),
each on a fresh copy of the same database in the same run, and prints each variant's figures under
"variants": a paired comparison of how many OpenMP threads a reply's query embedding should use when
the cores are shared (the client and the fake upstream run on this machine too).

`--env GOMP_SPINCOUNT=1000,30000` does the same for values of one environment variable of the daemon.

`--trees /work/old,.` does the same for the daemon's code: each variant runs `python -m daemon` from that
checkout (its own `daemon` and `engine` packages come first on the path), so a change is timed against
the tree before it in one run, on the same machine at the same time. `--rounds N` runs any of these
pairings N times, alternating, and pools each variant's samples.

Usage: python bench/chat.py [--memories 10000] [--requests 60] [--db PATH] [--think-s 1.0] [--query-threads 0,1]
       [--env NAME=V1,V2] [--trees DIR1,DIR2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from engine.usecases.chat import SHORT_QUERY_CHARS  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_api", REPO / "bench" / "api.py")
assert _spec is not None and _spec.loader is not None
bench_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_api)


class Upstream:
    """A Chat Completions server that answers at once and notes when each request arrived and each stream began."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        self.first_chunk_sent: list[float] = []
        self.url = ""
        self.runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.arrived.append(time.perf_counter())
        body = await request.json()
        reply = "嗯嗯，我记得的，你上次说过这件事。"
        if not body.get("stream"):
            return web.json_response({"id": "b", "object": "chat.completion", "created": 0, "model": body["model"],
                                      "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                                                   "finish_reason": "stop"}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(0, len(reply), 4):
            chunk = {"id": "b", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "delta": {"content": reply[i:i + 4]}, "finish_reason": None}]}
            if i == 0:
                self.first_chunk_sent.append(time.perf_counter())
            await resp.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"  # type: ignore[union-attr]


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def stats(values: list[float]) -> dict[str, Any]:
    return {"count": len(values), "p50_ms": round(bench_api.percentile(values, 50), 1),
            "p95_ms": round(bench_api.percentile(values, 95), 1), "max_ms": round(max(values), 1) if values else None}


async def indexed(session: aiohttp.ClientSession, wait_s: float = 10.0) -> None:
    """Wait (at most wait_s) until the indexer has embedded the previous turn, as it has by the time a user
    has typed the next message: the timings are then anima's work for this request, not the last one's."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        async with session.get("http://anima/v1/health") as resp:
            if not (await resp.json()).get("vectors_pending"):
                return
        await asyncio.sleep(0.05)


async def drive(sock: str, upstream: Upstream, requests: int, think_s: float, pid: int, tag: str = "第"
                ) -> dict[str, Any]:
    """`requests` chat turns, then up to 30 context requests; `tag` marks the questions (a warm-up asks others:
    a question the daemon saw a moment ago would find its vectors held, daemon/api/query_vectors.py)."""
    before: list[float] = []
    before_dialogue: list[float] = []  # short last messages, read with the two turns before them (4 texts embedded)
    first_extra: list[float] = []
    first_total: list[float] = []
    errors = 0
    history: list[dict[str, str]] = []
    cpu_start, wall_start = cpu_s(pid), time.monotonic()
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as session:
        for i in range(requests):
            question = bench_api.QUERIES[i % len(bench_api.QUERIES)] + f"（{tag}{i}次）"
            history = [*history[-6:], {"role": "user", "content": question}]
            stream = i % 2 == 1
            body = json.dumps({"model": "bench", "messages": history, "stream": stream}, ensure_ascii=False)
            await indexed(session)
            arrived_before = len(upstream.arrived)
            sent = time.perf_counter()
            async with session.post("http://anima/v1/chat/completions", data=body.encode(),
                                    headers={"Content-Type": "application/json"}) as resp:
                if resp.status != 200:
                    errors += 1
                    await resp.read()
                    continue
                if not stream:
                    out = await resp.json()
                    reply = out["choices"][0]["message"]["content"]
                else:
                    got_first = None
                    pieces = []
                    async for line in resp.content:
                        text = line.decode().strip()
                        if not text.startswith("data:") or text == "data: [DONE]":
                            continue
                        delta = json.loads(text[5:])["choices"][0]["delta"].get("content")
                        if delta and got_first is None:
                            got_first = time.perf_counter()
                        pieces.append(delta or "")
                    reply = "".join(pieces)
                    if got_first is not None:
                        first_extra.append((got_first - upstream.first_chunk_sent[-1]) * 1000)
                        first_total.append((got_first - sent) * 1000)
            if len(upstream.arrived) > arrived_before:
                short = len(question) < SHORT_QUERY_CHARS and len(history) > 1
                (before_dialogue if short else before).append((upstream.arrived[-1] - sent) * 1000)
            history.append({"role": "assistant", "content": reply})
            await asyncio.sleep(think_s)
    wall = time.monotonic() - wall_start
    context: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as session:
        for i in range(min(requests, 30)):
            question = bench_api.QUERIES[i % len(bench_api.QUERIES)] + f"（{tag}{i}次）"
            sent = time.perf_counter()
            async with session.post("http://anima/v1/context", json={"query": question}) as resp:
                await resp.read()
            context.append((time.perf_counter() - sent) * 1000)
            await asyncio.sleep(think_s)
    raw = {"context_ms": context, "before_upstream_ms": before + before_dialogue,
           "before_upstream_ms_one_message": before, "before_upstream_ms_with_turns_before": before_dialogue,
           "first_token_extra_ms": first_extra, "first_token_total_ms": first_total}
    return {**{key: stats(values) for key, values in raw.items()}, "_raw": raw, "errors": errors,
            "daemon_cpu_s_per_request": round((cpu_s(pid) - cpu_start) / max(1, requests), 3),
            "daemon_cpu_pct": round(100 * (cpu_s(pid) - cpu_start) / wall, 1), "daemon_rss_mb": rss_mb(pid)}


async def run(db: Path, work: Path, args: argparse.Namespace, query_threads: int | None = None,
              env: dict[str, str] | None = None, tree: Path = REPO) -> dict[str, Any]:
    upstream = Upstream()
    await upstream.start()
    sock = str(work / "a.sock")
    config = work / "config.toml"
    memory = "" if query_threads is None else f"[memory]\nquery_embedding_threads = {query_threads}\n"
    config.write_text(f'[log]\nlevel = "info"\nformat = "json"\n[api]\nsocket_path = "{sock}"\n'
                      f'[model]\nbase_url = "{upstream.url}"\nname = "bench-model"\n{memory}', encoding="utf-8")
    log = open(work / "daemon.log", "w")  # noqa: SIM115 - closed below
    daemon = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                              stdout=log, stderr=subprocess.STDOUT, cwd=tree, env={**os.environ, **(env or {})})
    try:
        await bench_api.wait_for_socket(sock, 180)
        await drive(sock, upstream, 6, 0.0, daemon.pid, tag="预热第")  # warm-up: the model, the page cache, the caches
        mark = (work / "daemon.log").stat().st_size
        result = await drive(sock, upstream, args.requests, args.think_s, daemon.pid)
        with open(work / "daemon.log", "rb") as handle:
            handle.seek(mark)
            lines = [json.loads(line) for line in handle if line.startswith(b"{")]
        replied = [x for x in lines if x.get("event") == "api.chat_replied"]
        fields = {"daemon_prepare_ms": "prepare_ms", "daemon_prepare_embed_ms": "embed_ms", "daemon_prepare_db_ms": "db_ms"}
        raw = {key: [float(x[field]) for x in replied] for key, field in fields.items()}
        return {**result, **{key: stats(values) for key, values in raw.items()}, "_raw": {**result["_raw"], **raw}}
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        log.close()
        assert upstream.runner is not None
        await upstream.runner.cleanup()


def pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One variant's figures over its rounds: the timings' samples pooled, the rest listed per round."""
    if len(runs) == 1:
        return {key: value for key, value in runs[0].items() if key != "_raw"}
    out: dict[str, Any] = {key: stats([v for run in runs for v in run["_raw"][key]]) for key in runs[0]["_raw"]}
    for key in runs[0]:
        if key not in out and key != "_raw":
            out[f"{key}_per_round"] = [run[key] for run in runs]
    return out


def prepare_cpu(db: Path, requests: int) -> dict[str, Any]:
    """The CPU time of what the chat endpoint does before the model call, in this process on a copy of `db`:
    the query's embedding and prepare_chat (recall, her state, the offer, how she feels after reading, the
    prompt). CPU time, unlike wall time, barely moves when other work shares the cores."""
    import engine  # noqa: F401  (its CPU thread policy first, as the daemon does)
    from engine.chat.prompt import load_template
    from engine.chat.request import parse_request
    from engine.memory.embed import make_embedder
    from engine.memory.recall import query_lines
    from engine.settings import Settings
    from engine.store import connect
    from engine.usecases.chat import prepare_chat

    settings = Settings()
    embedder = make_embedder(settings.memory)
    conn = connect(db)
    parts = load_template()
    embed_ms: list[float] = []
    total_ms: list[float] = []
    for i in range(requests + 3):
        question = bench_api.QUERIES[i % len(bench_api.QUERIES)] + f"（第{i}次）"
        chat = parse_request({"messages": [{"role": "user", "content": question}]})
        started = time.process_time()
        texts = list(dict.fromkeys([question, *query_lines(question)]))  # as the route does
        known = dict(zip(texts, embedder.embed_queries(texts), strict=True))
        embedded = time.process_time()
        prepare_chat(conn, settings, None, embedder, chat, "小安", parts, known, time.time())
        done = time.process_time()
        if i >= 3:  # the first calls warm the caches
            embed_ms.append((embedded - started) * 1000)
            total_ms.append((done - started) * 1000)
    conn.close()
    return {"prepare_cpu_ms": stats(total_ms), "prepare_cpu_embed_ms": stats(embed_ms)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--think-s", type=float, default=1.0, help="pause between requests (a user typing)")
    parser.add_argument("--db", type=Path, help="a database built before (kept; a copy is used)")
    parser.add_argument("--env", metavar="NAME=V1,V2",
                        help="pair values of one environment variable of the daemon, e.g. GOMP_SPINCOUNT=1000,30000")
    parser.add_argument("--trees", help="comma-separated checkouts whose daemon to pair, e.g. /work/old,.")
    parser.add_argument("--rounds", type=int, default=1, help="run the paired variants this many times, "
                                                            "alternating; their requests are pooled per variant")
    parser.add_argument("--query-threads", help="comma-separated [memory] query_embedding_threads values to pair, e.g. 0,1")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="anima-chat-bench-", dir="/tmp"))
    try:
        base = args.db
        if base is None or not base.exists():
            base = base or work / "base.db"
            print(f"building {args.memories} memories into {base} ...", file=sys.stderr)
            bench_api.build_db(base, args.memories)
        load_before = round(os.getloadavg()[0], 2)  # other work on the machine: read the timings with it
        cpu_db = work / "cpu.db"
        shutil.copyfile(base, cpu_db)
        cpu = prepare_cpu(cpu_db, args.requests)
        # Each variant: a label, [memory] query_embedding_threads (None: the default), daemon environment, checkout.
        paired: list[tuple[str, int | None, dict[str, str], Path]] = []
        if args.env:
            name, _, values = args.env.partition("=")
            paired = [(f"{name}={value}", None, {name: value}, REPO) for value in values.split(",")]
        elif args.query_threads:
            paired = [(f"query_threads={int(v) or 'all'}", int(v), {}, REPO) for v in args.query_threads.split(",")]
        elif args.trees:
            paired = [(str(Path(t).resolve()), None, {}, Path(t).resolve()) for t in args.trees.split(",")]
        if paired:
            rounds: dict[str, list[dict[str, Any]]] = {label: [] for label, *_ in paired}
            for _ in range(max(1, args.rounds)):
                for i, (label, query_threads, env, tree) in enumerate(paired):
                    db = work / f"anima-{i}.db"
                    shutil.copyfile(base, db)
                    rounds[label].append(asyncio.run(run(db, work, args, query_threads, env, tree)))
                    db.unlink()
            result = {**cpu, "variants": {label: pooled(runs) for label, runs in rounds.items()}}
        else:
            db = work / "anima.db"
            shutil.copyfile(base, db)
            result = {**cpu, **pooled([asyncio.run(run(db, work, args))])}
        print(json.dumps({"memories": args.memories, "requests": args.requests, "cores": os.cpu_count(),
                          "load_avg_1m_before_after": [load_before, round(os.getloadavg()[0], 2)], **result},
                         ensure_ascii=False, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
