"""`anima restore PATH [--db TARGET]`: verify a snapshot, then make it the database (the old file is kept as a backup)."""

from __future__ import annotations

import argparse
from pathlib import Path

from daemon.cli.env import CliEnv
from engine.snapshot import restore


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "restore", help="verify a snapshot and restore it (refused while a daemon runs on the target)"
    )
    parser.add_argument("path", help="snapshot file written by anima export (its manifest must be beside it)")
    # dest differs from the global --db so one does not silently override the other.
    parser.add_argument("--db", dest="target", help="database file to restore into (default: the global --db / config)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    target = Path(args.target) if args.target else env.db_path
    done = restore(Path(args.path), target, env.clock.now())
    if args.json:
        env.print_json(done)
        return 0
    who = done["contents"]["companion"]["name"] if done["contents"]["companion"] else "(no companion)"
    print(f"restored {who} into {done['target']} (schema {done['schema_version']}, {done['tables']} tables verified)")
    if done["backup"]:
        print(f"  the previous file is kept as {done['backup']}")
    return 0
