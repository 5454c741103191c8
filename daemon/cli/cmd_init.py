"""`anima init`: create her (name, birth instant, time zone, place) in a new database."""

from __future__ import annotations

import argparse

from daemon.cli.env import CliEnv
from engine.companion import create_companion


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("init", help="create the companion: name, birth instant, time zone")
    parser.add_argument("--name", required=True)
    parser.add_argument("--birth", required=True, help='local birth time "YYYY-MM-DD HH:MM"')
    parser.add_argument("--tz", default="Asia/Shanghai", help="IANA time zone of the birth (default Asia/Shanghai)")
    parser.add_argument("--place", default=None)
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    conn = env.open_db()
    try:
        companion = create_companion(conn, name=args.name, birth_local=args.birth, tz=args.tz, place=args.place,
                                     sect=env.settings.companion.bazi_sect, now=env.clock.now())
    finally:
        conn.close()
    pillars = companion["chart"].get("pillars", {})
    if args.json:
        env.print_json({"name": companion["name"], "db": str(env.db_path), "chart": companion["chart"]})
    else:
        four = " ".join(pillars.get(k, "?") for k in ("year", "month", "day", "time"))
        print(f"created {companion['name']} in {env.db_path}: {four}, day master {companion['chart'].get('day_master')}")
    return 0
