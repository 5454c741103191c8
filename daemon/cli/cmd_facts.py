"""`anima facts [--as-of DATE] [--all] [--relations] [--json]`: what she holds true about the user (now, or on a date)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from daemon.cli.env import CliEnv
from engine.consolidate.facts_recall import list_facts
from engine.consolidate.relational import list_relations
from engine.errors import InputError
from engine.times import parse_instant
from engine.usecases.inspect import companion_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("facts", help="consolidated facts: active now, or true as of a date")
    parser.add_argument("--as-of", dest="as_of", help="YYYY-MM-DD (end of that day, her time zone) or ISO-8601 time")
    parser.add_argument("--all", action="store_true", help="every fact ever written, superseded ones too")
    parser.add_argument("--relations", action="store_true",
                        help="list only the relational entries (rituals, nicknames, inside jokes, patterns, taboos)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (facts and relations)")
    parser.set_defaults(func=handle)


def parse_as_of(text: str, tz: str) -> float:
    """A date means the end of that day in `tz`; a full ISO time is taken as given (UTC if no offset)."""
    if len(text.strip()) == 10:
        try:
            day = datetime.strptime(text.strip(), "%Y-%m-%d").date()
        except ValueError:
            raise InputError(f"--as-of must be a date YYYY-MM-DD or an ISO 8601 time, got {text!r}") from None
        end = datetime.combine(day + timedelta(days=1), time(0, 0), ZoneInfo(tz))
        return end.timestamp() - 0.001
    return parse_instant(text, "--as-of")


def _date(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d") if ts else "now"


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    conn = env.open_db(create=False)
    try:
        companion = companion_of(conn)
        tz = env.settings.life.tz if companion else env.settings.companion.demo_tz  # her zone (engine/home.py)
        as_of = parse_as_of(args.as_of, tz) if args.as_of else None
        facts: list[dict[str, Any]] = [] if args.relations else list_facts(conn, as_of, include_history=args.all)
        relations = list_relations(conn, as_of, include_history=args.all)
    finally:
        conn.close()
    if args.json:
        env.print_json({"as_of": as_of, "facts": facts, "relations": relations})
        return 0
    when = f" as of {args.as_of}" if args.as_of else ""
    if not args.relations:
        if not facts:
            print("no facts" + when)
        for fact in facts:
            print(f"#{fact['id']} [{fact['key']}] {fact['statement']}{_span(fact)}")
    if relations:
        if not args.relations:
            print("relations:")
        for rel in relations:
            print(f"~{rel['id']} [{rel['kind']}] {rel['statement']}{_span(rel)}")
    elif args.relations:
        print("no relational entries" + when)
    return 0


def _span(row: dict[str, Any]) -> str:
    if row["valid_to"] is None:
        return ""
    if row.get("ended_by"):
        return f"  (until {_date(row['valid_to'])}, lifted by the user)"
    return f"  (until {_date(row['valid_to'])}, superseded by #{row['superseded_by']})"
