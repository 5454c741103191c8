"""`anima config show`: every effective setting, its value, and where it came from (the file, --db, or a default)."""

from __future__ import annotations

import argparse
import json
import os

from daemon.cli.env import CliEnv
from daemon.config import setting_sources


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="show the effective settings and where each came from")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="every setting: value and source (file, --db, default)")
    show.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def _file_origin(args: argparse.Namespace) -> str:
    if getattr(args, "config", None):
        return "--config"
    if os.environ.get("ANIMA_CONFIG"):
        return "$ANIMA_CONFIG"
    return "./config.toml"


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    rows = setting_sources(str(env.config_file) if env.config_file else None)
    for row in rows:
        if row["key"] == "database.path" and getattr(args, "db", None):
            row.update(value=str(env.db_path), source="--db")
    header = {"config_file": str(env.config_file) if env.config_file else None,
              "found_by": _file_origin(args) if env.config_file else "no file: embedded defaults"}
    if args.json:
        env.print_json({**header, "settings": rows})
        return 0
    print(f"# config file: {header['config_file'] or '(none)'} ({header['found_by']})")
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        mark = "  [restart]" if row["restart_needed"] else ""
        print(f"{row['key']:<{width}} = {json.dumps(row['value'], ensure_ascii=False)}  # {row['source']}{mark}")
    return 0
