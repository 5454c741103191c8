"""`anima recall "QUERY"`: hybrid recall on the database file (daemon running or not); `--batch FILE` for many.

Inspection only: it reads and never writes (no strengthening, no injection record), so a batch's
answers do not depend on its order and the file is left as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from daemon.cli.env import CliEnv
from engine.errors import InputError
from engine.memory.embed import make_embedder
from engine.memory.ingest import parse_ts
from engine.usecases.context import recall_for
from engine.usecases.switches import current_switches


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("recall", help="recall memories for a query (prints hits and the context block)")
    parser.add_argument("query", nargs="?", help="what to recall")
    parser.add_argument("--k", type=int, default=None, help="number of hits (default [memory] k)")
    parser.add_argument("--json", action="store_true", help="print the JSON contract")
    parser.add_argument("--as-of", dest="as_of", help="only memories up to this ISO-8601 time")
    parser.add_argument("--batch", help='JSON Lines file of {"q": ...}; one JSON result per line')
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    if (args.query is None) == (args.batch is None):
        raise InputError('give either a QUERY or --batch FILE.jsonl, e.g. anima recall "我养的猫叫什么"')
    as_of = parse_ts(args.as_of, "--as-of") if args.as_of else None
    conn = env.open_db()
    embedder = make_embedder(env.settings.memory)
    switches = current_switches(conn)  # once for the whole batch: its answers do not depend on its order

    def one(query: str) -> dict[str, Any]:
        # The recall POST /v1/context runs (same switches, same sources), without its injection record.
        return recall_for(conn, embedder, query, env.settings, switches, env.clock.now(), k=args.k,
                          as_of=as_of).to_json()

    if args.batch:
        for number, query in enumerate(batch_queries(Path(args.batch)), start=1):
            try:
                env.print_json(one(query))
            except InputError as exc:
                raise InputError(f"{args.batch}: line {number}: {exc}") from None
            sys.stdout.flush()
        return 0
    out = one(args.query)
    if args.json:
        env.print_json(out)
    else:
        print(f"mode: {out['mode']}  hits: {len(out['hits'])}")
        for hit in out["hits"]:
            print("  " + hit_line(hit))
        print()
        print(out["context"] or "(no context)")
    return 0


def hit_line(hit: dict[str, Any]) -> str:
    """One hit as a line: score, date, turn, who said it (`fact #id key` for a consolidated fact), text."""
    # A fact has no role or memory id of its own (openapi.json FactHit).
    who = f"fact #{hit['fact_id']} {hit['key']}" if hit["source"] == "fact" else str(hit["role"])
    return f"{hit['score']:.3f}  {hit['ts'][:10]}  {hit['turn_id']}  {who}  {hit['text'][:60]}"


def batch_queries(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    queries = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise InputError(f'{path}: line {number}: expected a JSON object like {{"q": "..."}}') from None
        if not isinstance(record, dict) or not isinstance(record.get("q"), str):
            raise InputError(f'{path}: line {number}: expected a JSON object like {{"q": "..."}}')
        queries.append(record["q"])
    return queries
