"""`anima jobs [--json]`: the leased background jobs, newest first, with their recent history."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from daemon.cli.env import CliEnv
from engine.jobs import job_events, list_jobs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("jobs", help="background jobs: status, attempts, errors, history")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--limit", type=int, default=20, help="how many jobs (newest first; default 20)")
    parser.set_defaults(func=handle)


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ") if ts else "-"


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    conn = env.open_db(create=False)
    try:
        rows: list[dict[str, Any]] = list_jobs(conn, max(1, args.limit))
        for row in rows:
            row["events"] = job_events(conn, row["id"])
    finally:
        conn.close()
    if args.json:
        env.print_json({"jobs": rows})
        return 0
    if not rows:
        print("no jobs")
        return 0
    for row in rows:
        line = (f"#{row['id']} {row['kind']} {row['status']} attempt {row['attempts']}/{row['max_attempts']} "
                f"created {_when(row['created_at'])} finished {_when(row['finished_at'])}")
        if row["error"]:
            line += f"  error: {row['error']}"
        print(line)
        for event in row["events"][-6:]:
            detail = " ".join(f"{k}={v}" for k, v in event["detail"].items())
            print(f"    {_when(event['ts'])} {event['event']} (attempt {event['attempt']}) {detail}")
    return 0
