"""`anima control list|get KEY|set KEY VALUE|reset KEY`: the runtime switches in life_control."""

from __future__ import annotations

import argparse
import sys

from daemon.cli.env import CliEnv
from engine import control
from engine.usecases.switches import change_switch, current_switches, reset_switch, set_switches


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("control", help="list, get, set or reset runtime switches (life_control)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    list_parser = actions.add_parser("list", help="every switch with its value, default and meaning")
    list_parser.add_argument("--json", action="store_true")
    get_parser = actions.add_parser("get", help="one switch's value")
    get_parser.add_argument("key")
    get_parser.add_argument("--json", action="store_true")
    set_parser = actions.add_parser("set", help="set a switch (takes effect within one heartbeat)")
    set_parser.add_argument("key")
    set_parser.add_argument("value")
    set_parser.add_argument("--json", action="store_true")
    reset_parser = actions.add_parser("reset", help="forget a switch's stored value: its default applies again")
    reset_parser.add_argument("key")
    reset_parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    if args.action in ("get", "set", "reset"):
        spec = control.spec_of(args.key)  # unknown key: exit 2 before touching the database
        if args.key != spec.name:  # the daemon logs control.deprecated for a change (event_log alias)
            print(f"anima: note: control {args.key} is now called {spec.name}; the old name is deprecated",
                  file=sys.stderr)
    value = control.parse_value(args.key, args.value) if args.action == "set" else None
    conn = env.open_db()
    try:
        if args.action == "list":
            values, stored = current_switches(conn).as_dict(), set_switches(conn)
            rows = [
                {"key": k, "value": values[k], "default": s.default, "set": k in stored, "description": s.description}
                for k, s in control.REGISTRY.items()
            ]
            if args.json:
                env.print_json(rows)
            else:
                for row in rows:
                    mark = "" if row["set"] else " (default)"
                    print(f"{row['key']:<16} {_show(row['value']):<5}{mark:<10}  {row['description']}")
        elif args.action == "get":
            name = control.canonical(args.key)
            current = current_switches(conn).value(name)
            env.print_json({"key": name, "value": current}) if args.json else print(_show(current))
        else:
            if args.action == "reset":
                change = reset_switch(conn, args.key, env.clock.now(), actor="cli")
            else:
                change = change_switch(conn, args.key, value, env.clock.now(), actor="cli")
            if args.json:
                env.print_json({"key": change.key, "old": change.old, "new": change.new})
            else:
                print(f"{change.key}: {_show(change.old)} -> {_show(change.new)}")
    finally:
        conn.close()
    return 0


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
