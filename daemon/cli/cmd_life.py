"""`anima life`: the operator's view of her timeline (untold events marked), and `anima life add` for backstory.

This is an operator tool on the host, not a chat front-end path: it shows untold (told=0) life
events, clearly marked, because the operator owns the file. Nothing here is logged.
"""

from __future__ import annotations

import argparse
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from daemon.cli.env import CliEnv
from engine import activity as act
from engine.errors import InputError
from engine.times import parse_instant
from engine.usecases.backstory import add_backstory, timeline_rows


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("life", help="her timeline (operator view; untold events marked)")
    parser.add_argument("--day", help="local day YYYY-MM-DD in [life] tz (default: today)")
    parser.add_argument("--since", help="ISO 8601 instant: everything since then instead of one day")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)
    sub = parser.add_subparsers(dest="life_command", metavar="add")
    add = sub.add_parser("add", help="add a backstory life event")
    add.add_argument("text")
    add.add_argument("--told", action="store_true", help="she has already told it (it becomes recallable memory)")
    add.add_argument("--ts", help="when it happened, ISO 8601 (default: now)")
    add.add_argument("--json", action="store_true")
    add.set_defaults(func=handle_add)


def window(args: argparse.Namespace, env: CliEnv) -> tuple[float, float]:
    env.adopt_home()  # days and times are hers
    tz = env.settings.life.tz
    now = env.clock.now()
    if args.since:
        return parse_instant(args.since, "--since", tz), now + 1.0
    if args.day:
        try:
            day = date.fromisoformat(args.day)
        except ValueError:
            raise InputError(f"--day must be a date YYYY-MM-DD, got {args.day!r}") from None
    else:
        day = act.local_time(now, tz).date()
    start = datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(tz))
    return start.timestamp(), (start + timedelta(days=1)).timestamp()


def timeline(conn: Any, since: float, until: float, tz: str) -> dict[str, Any]:
    def iso(t: float | None) -> str | None:
        return None if t is None else act.local_time(t, tz).isoformat(timespec="seconds")

    rows, life_events = timeline_rows(conn, since, until)
    acts = [{"id": a["id"], "kind": a["kind"], "label": a["label"], "since": iso(a["started_at"]),
             "until": iso(a["ended_at"] if a["ended_at"] is not None else a["expected_end"]), "why": a["why"],
             "status": a["status"]} for a in rows]
    owner = owners(rows)
    events = [{"id": e["id"], "ts": iso(e["ts"]), "kind": e["kind"], "origin": e["origin"], "told": bool(e["told"]),
               "activity_id": owner.get((e["kind"], e["activity_id"]), e["activity_id"]), "text": e["text"]}
              for e in life_events]
    return {"since": iso(since), "until": iso(until), "activities": acts, "life_events": events}


def owners(rows: list[dict[str, Any]]) -> dict[tuple[str, int | None], int]:
    """Which shown activity a 'resumed' event belongs to: the resumed activity, not the suspended one it names.

    The engine writes a completion or abandonment against the activity it ends, and a resumption
    against the suspended row; the sentence ("接着看…") describes the new activity that carries on,
    so the view files it there. Everything else keeps the activity_id the engine wrote.
    """
    out: dict[tuple[str, int | None], int] = {}
    for a in rows:
        source = a["detail"].get("resumed_from")
        if isinstance(source, int):
            out[("resumed", source)] = int(a["id"])
    return out


def layout(view: dict[str, Any], cut: int) -> list[str]:
    """The text lines of a timeline: each activity, then the events that belong to it, then loose events by time.

    Events are placed by their activity, never by timestamp alone: a completion is written at the
    instant the activity ends, which is also the instant the next one starts, so sorting by time put
    every completion under the next activity (issue 12). Events with no shown activity (backstory,
    or an activity outside the window) stand on their own at their time.
    """
    shown = {a["id"] for a in view["activities"]}
    under: dict[int, list[dict[str, Any]]] = {}
    loose: list[dict[str, Any]] = []
    for e in view["life_events"]:
        if e["activity_id"] in shown:
            under.setdefault(e["activity_id"], []).append(e)
        else:
            loose.append(e)
    blocks: list[tuple[str, int, list[str]]] = []
    for a in view["activities"]:
        why = act.WHY_ZH.get(a["why"], a["why"])
        mark = "" if a["status"] in ("done", "current") else f" [{a['status']}]"
        now_mark = "  <- now" if a["status"] == "current" else ""
        span = f"{a['since'][cut:16]}-{(a['until'] or '')[11:16]}"
        lines = [f"  {span}  {a['label']}（{why}）{mark}{now_mark}"]
        lines += [_event_line(e, cut, indent=6) for e in under.get(a["id"], [])]
        blocks.append((a["since"], 0, lines))
    # A loose event at the same instant as an activity start comes first: it happened before it began.
    blocks += [(e["ts"], -1, [_event_line(e, cut, indent=2)]) for e in loose]
    return [line for _, _, lines in sorted(blocks, key=lambda b: (b[0], b[1])) for line in lines]


def _event_line(e: dict[str, Any], cut: int, indent: int) -> str:
    told = "told" if e["told"] else "UNTOLD"
    return f"{' ' * indent}{e['ts'][cut:16]} #{e['id']} [{told}] {e['text']}"


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    since, until = window(args, env)
    conn = env.open_db(create=False)
    try:
        view = timeline(conn, since, until, env.settings.life.tz)
    finally:
        conn.close()
    if args.json:
        env.print_json(view)
        return 0
    print(f"{view['since']} .. {view['until']}")
    # One day: clock times are enough; a longer window shows the date too.
    cut = 11 if until - since <= 86400.0 + 1 else 5
    lines = layout(view, cut)
    for line in lines:
        print(line)
    if not lines:
        print("  (nothing recorded)")
    return 0


def handle_add(args: argparse.Namespace, env: CliEnv) -> int:
    now = env.clock.now()
    env.adopt_home()
    ts = parse_instant(args.ts, "--ts", env.settings.life.tz) if args.ts else now
    conn = env.open_db()
    try:
        embedder = None
        if args.told:
            # Imported here: recall needs the embedder only when a told event must become memory.
            from engine.memory.embed import make_embedder

            embedder = make_embedder(env.settings.memory)
        event_id = add_backstory(conn, args.text, ts, now, told=bool(args.told), embedder=embedder)
    finally:
        conn.close()
    if args.json:
        env.print_json({"id": event_id, "told": bool(args.told), "ts": ts})
    else:
        print(f"life event #{event_id} added ({'told' if args.told else 'untold'})")
    return 0
