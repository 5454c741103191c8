"""`anima restore PATH [--db TARGET]` or `anima restore --from-replica URL [--at TIME] --db TARGET`: verify, then replace.

PATH is a snapshot of anima export (checked against its manifest). --from-replica restores the Litestream
replica `<URL>/<TARGET's stem>` (the URL given to `anima replication config`) into a temp folder beside
TARGET and checks it the same way (daemon/replication.py). Either way the old file is kept as a backup.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from daemon.cli.env import CliEnv
from engine.errors import InputError
from engine.restore import restore


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "restore", help="verify a snapshot or a replica and restore it (refused while a daemon runs on the target)"
    )
    parser.add_argument("path", nargs="?",
                        help="snapshot file written by anima export (its manifest must be beside it)")
    parser.add_argument("--from-replica", metavar="URL",
                        help="restore from the Litestream replica <URL>/<target's stem> instead of a snapshot")
    parser.add_argument("--at", metavar="TIME",
                        help="with --from-replica: the state as of this ISO 8601 time (e.g. 2026-12-01T14:00:00Z)")
    # dest differs from the global --db so one does not silently override the other.
    parser.add_argument("--db", dest="target", help="database file to restore into (default: the global --db / config)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    target = Path(args.target) if args.target else env.db_path
    if (args.path is None) == (args.from_replica is None):
        raise InputError("give a snapshot PATH or --from-replica URL (one of them)")
    if args.at and not args.from_replica:
        raise InputError("--at applies to --from-replica only; a snapshot is the state it was exported in")
    if args.from_replica:
        from daemon.replication import parse_replica_url, parse_time, restore_from_replica

        base = parse_replica_url(args.from_replica)
        at = parse_time(args.at) if args.at else None
        done = restore_from_replica(base, target, env.clock.now(), at)
    else:
        done = restore(Path(args.path), target, env.clock.now())
    if args.json:
        env.print_json(done)
        return 0
    who = done["contents"]["companion"]["name"] if done["contents"]["companion"] else "(no companion)"
    source = f" from {done['replica']}" if done.get("replica") else ""
    print(f"restored {who}{source} into {done['target']} (schema {done['schema_version']}, "
          f"{done['tables']} tables verified)")
    if done["backup"]:
        print(f"  the previous file is kept as {done['backup']}")
    return 0
