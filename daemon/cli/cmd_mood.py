"""`anima mood`: her mood and energy over time, as a PNG with activity bands (matplotlib) or a terminal sparkline."""

from __future__ import annotations

import argparse
from typing import Any

from daemon.cli.env import CliEnv
from engine import activity as act
from engine.errors import InputError
from engine.store import life as life_store

SPARKS = "▁▂▃▄▅▆▇█"
BAND_COLOURS = {"sleep": "#3b4cc0", "nap": "#6f8fd8", "rest": "#9bb7e0", "meal": "#f2b134", "reading": "#8cc084",
                "creative": "#d17ec9", "music": "#c9a0dc", "outdoor": "#6fcf97", "exercise": "#eb5757",
                "social": "#f2994a", "domestic": "#bdbdbd", "learning": "#56ccf2", "screen": "#828282",
                "chat": "#ff6f91"}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("mood", help="plot mood and energy over time (PNG with matplotlib, else sparkline)")
    parser.add_argument("--plot", metavar="FILE.png", help="write a PNG (needs the plot extra: pip install 'anima[plot]')")
    parser.add_argument("--days", type=float, default=1.0, help="how many days back (default 1)")
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
    now = env.clock.now()
    since = now - args.days * 86400.0
    conn = env.open_db(create=False)
    try:
        points = life_store.trace(conn, since, now + 1)
        acts = life_store.activities(conn, since, now + 1)
    finally:
        conn.close()
    if args.json:
        env.print_json(mood_json(points, acts, since, now))
        return 0
    if not points:
        print("no mood trace yet (the daemon writes one point per [life] trace_interval_s)")
        return 0
    if args.plot:
        try:
            _plot(args.plot, points, acts, env.settings.life.tz)
        except ImportError:
            print("matplotlib is not installed (pip install 'anima[plot]'); showing a sparkline instead")
        else:
            print(f"wrote {args.plot} ({len(points)} points, {len(acts)} activities)")
            return 0
    first = act.local_time(points[0]["ts"], env.settings.life.tz).strftime("%m-%d %H:%M")
    last = act.local_time(points[-1]["ts"], env.settings.life.tz).strftime("%m-%d %H:%M")
    print(f"{first} .. {last}  ({len(points)} points)")
    for key, name, lo in (("v", "valence ", -1.0), ("a", "arousal ", -1.0), ("d", "dominance", -1.0), ("e", "energy  ", 0.0)):
        values = [p[key] for p in points]
        print(f"{name} {sparkline(values, lo, 1.0)}  now {values[-1]:+.2f}")
    return 0


def _plot(path: str, points: list[dict[str, Any]], acts: list[dict[str, Any]], tz: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    import matplotlib.pyplot as plt

    zone = ZoneInfo(tz)

    def when(t: float) -> Any:  # matplotlib takes datetimes on a date axis; its stubs say float
        return datetime.fromtimestamp(t, UTC).astimezone(zone)

    xs = [when(p["ts"]) for p in points]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    specs = act.catalogue()
    for a in acts:
        spec = specs.get(a["kind"])
        category = spec.category if spec else "rest"
        colour = BAND_COLOURS.get(a["kind"], BAND_COLOURS.get(category, "#dddddd"))
        end = a["ended_at"] if a["ended_at"] is not None else a["expected_end"]
        ax.axvspan(when(a["started_at"]), when(end), color=colour, alpha=0.18, linewidth=0)
    for key, label, colour in (("v", "valence", "#d62728"), ("a", "arousal", "#ff7f0e"),
                               ("d", "dominance", "#2ca02c"), ("e", "energy", "#1f77b4")):
        ax.plot(xs, [p[key] for p in points], label=label, color=colour, linewidth=1.4)
    ax.set_ylim(-1.05, 1.05)
    ax.axhline(0, color="#999999", linewidth=0.6)
    ax.set_title("mood (V/A/D) and energy; bands = activities")
    ax.legend(loc="lower left", ncol=4, fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
