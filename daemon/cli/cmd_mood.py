"""`anima mood`: her mood and energy over time, as a PNG for people (daemon.plot) or a terminal sparkline."""

from __future__ import annotations

import argparse
from typing import Any

from daemon.cli.env import CliEnv
from engine import activity as act
from engine.errors import InputError
from engine.times import parse_instant
from engine.usecases.backstory import mood_history

SPARKS = "▁▂▃▄▅▆▇█"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("mood", help="plot mood and energy over time (PNG with matplotlib, else sparkline)")
    parser.add_argument("--plot", metavar="FILE.png", help="write a PNG (needs the plot extra: pip install 'anima[plot]')")
    parser.add_argument("--days", type=float, default=1.0, help="how many days back (default 1)")
    parser.add_argument("--until", metavar="ISO",
                        help="end of the window, ISO 8601 (default now); e.g. for a run kept by anima simulate --keep")
    parser.add_argument("--json", action="store_true",
                        help="print the trace points and activity spans as JSON (numbers and kinds only)")
    parser.set_defaults(func=handle)


def sparkline(values: list[float], lo: float, hi: float, width: int = 72) -> str:
    if not values:
        return ""
    step = max(1, len(values) // width)
    picked = [sum(values[i:i + step]) / len(values[i:i + step]) for i in range(0, len(values), step)]
    span = (hi - lo) or 1.0
    return "".join(SPARKS[min(len(SPARKS) - 1, max(0, int((v - lo) / span * len(SPARKS))))] for v in picked)


def mood_json(points: list[dict[str, Any]], acts: list[dict[str, Any]], since: float, until: float) -> dict[str, Any]:
    """`anima mood --json`: V/A/D and energy per trace point, and activity spans (kind and times, no detail)."""
    keys = ("ts", "v", "a", "d", "e")
    return {
        "since": since,
        "until": until,
        "points": [{k: p[k] for k in keys} for p in points],
        "latest": {k: points[-1][k] for k in keys} if points else None,
        "activities": [{"kind": a["kind"], "started_at": a["started_at"],
                        "ended_at": a["ended_at"], "expected_end": a["expected_end"]} for a in acts],
    }


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    if not 0 < args.days <= 90:
        raise InputError(f"--days must be more than 0 and at most 90, got {args.days}")
    env.adopt_home()  # --until is in her zone
    now = parse_instant(args.until, "--until", env.settings.life.tz) if args.until else env.clock.now()
    since = now - args.days * 86400.0
    conn = env.open_db(create=False)
    try:
        history = mood_history(conn, since, now + 1)
    finally:
        conn.close()
    points, acts, told, her_name = history["points"], history["activities"], history["told"], history["name"]
    if args.json:
        env.print_json(mood_json(points, acts, since, now))
        return 0
    if not points:
        print("no mood trace yet (the daemon writes one point per [life] trace_interval_s)")
        return 0
    if args.plot:
        try:
            from daemon.plot import draw_life, note_missing_font

            shown = draw_life(args.plot, points, acts, told, env.settings.life.tz,
                              name=her_name)
        except ImportError:
            print("matplotlib is not installed (pip install 'anima[plot]'); showing a sparkline instead")
        else:
            note_missing_font(shown)
            print(f"wrote {args.plot} ({len(points)} points, {len(acts)} activities, {shown['chats']} chats, "
                  f"{shown['told']} told life events)")
            return 0
    first = act.local_time(points[0]["ts"], env.settings.life.tz).strftime("%m-%d %H:%M")
    last = act.local_time(points[-1]["ts"], env.settings.life.tz).strftime("%m-%d %H:%M")
    print(f"{first} .. {last}  ({len(points)} points)")
    for key, name, lo in (("v", "valence ", -1.0), ("a", "arousal ", -1.0), ("d", "dominance", -1.0), ("e", "energy  ", 0.0)):
        values = [p[key] for p in points]
        print(f"{name} {sparkline(values, lo, 1.0)}  now {values[-1]:+.2f}")
    return 0
