"""`anima status`: who she is, whether her daemon is alive, and how she is right now."""

from __future__ import annotations

import argparse
import time
from typing import Any

from daemon.cli.env import CliEnv
from engine.jobs import status_counts
from engine.store import code_schema_version, db_schema_version, driver_name
from engine.store.core import controls, daemon_state, get_companion
from engine.store.lock import is_locked


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("status", help="companion, daemon liveness, mood, activity, jobs, switches")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def collect(conn: Any, env: CliEnv) -> dict[str, Any]:
    companion = get_companion(conn)
    state = daemon_state(conn) or {}
    wall = time.time()
    locked = is_locked(env.db_path)
    last_wall = state.get("last_beat_wall")
    alive = bool(locked and last_wall is not None and env.settings.heartbeat.is_fresh(wall - last_wall))
    report: dict[str, Any] = {
        "db": str(env.db_path),
        "companion": None,
        "daemon": {
            "alive": alive,
            "locked": locked,
            "pid": state.get("pid") if locked else None,
            "last_beat_at": state.get("last_beat_at"),
            "seconds_since_beat": round(wall - last_wall, 3) if last_wall else None,
            "uptime_s": round(env.clock.now() - state["started_at"], 1) if alive and state.get("started_at") else None,
            "beats": state.get("beats"),
            "loop_lag_ms": state.get("loop_lag_ms"),
        },
        "schema": {"db": db_schema_version(conn), "code": code_schema_version()},
        "sqlite_driver": driver_name(),
        "controls": controls(conn),
    }
    if companion:
        chart = companion["chart"]
        report["companion"] = {
            "name": companion["name"],
            "birth": companion["birth_local"],
            "tz": companion["birth_tz"],
            "pillars": chart.get("pillars"),
            "day_master": chart.get("day_master"),
        }
        report.update(_inner(conn, env, companion))
    report.update(_jobs(conn))
    return report


def _inner(conn: Any, env: CliEnv, companion: dict[str, Any]) -> dict[str, Any]:
    try:
        from engine.inner import inner_snapshot
        from engine.persona import persona_of_companion
    except ImportError:
        return {}
    persona = persona_of_companion(companion)
    return {"inner": inner_snapshot(conn, env.settings, persona, env.clock.now())}


def _jobs(conn: Any) -> dict[str, Any]:
    return {"jobs": status_counts(conn)}


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    conn = env.open_db(create=False)
    try:
        report = collect(conn, env)
    finally:
        conn.close()
    if args.json:
        env.print_json(report)
        return 0
    print(render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    lines = []
    companion = report["companion"]
    if companion:
        pillars = companion["pillars"] or {}
        four = " ".join(pillars.get(k, "?") for k in ("year", "month", "day", "time"))
        lines.append(f"{companion['name']}  born {companion['birth']} {companion['tz']}  {four}  "
                     f"day master {companion['day_master']}")
    else:
        lines.append("no companion yet (anima init, or anima run creates a demo companion)")
    daemon = report["daemon"]
    if daemon["alive"]:
        lines.append(f"daemon: alive, pid {daemon['pid']}, up {daemon['uptime_s']} s, "
                     f"last beat {daemon['seconds_since_beat']} s ago, lag {daemon['loop_lag_ms']:.0f} ms")
    else:
        lines.append("daemon: not running" + (" (lock held but no recent beat)" if daemon["locked"] else ""))
    inner = report.get("inner")
    if inner:
        mood = inner["mood"]
        lines.append(f"mood: {mood['label']}  V {mood['v']:+.2f} A {mood['a']:+.2f} D {mood['d']:+.2f}  "
                     f"energy {inner['energy']:.2f}")
        act = inner.get("activity")
        if act:
            lines.append(f"doing: {act['label']} since {act['since']} until {act['until']} "
                         f"(why: {act['why']}; next: {act['next']})")
    jobs = report.get("jobs") or {}
    lines.append("jobs: " + (", ".join(f"{k} {v}" for k, v in sorted(jobs.items())) or "none"))
    lines.append(f"schema {report['schema']['db']} (code {report['schema']['code']}), {report['sqlite_driver']}")
    lines.append("switches: " + ", ".join(f"{k}={'on' if v is True else 'off' if v is False else v}"
                                         for k, v in report["controls"].items()))
    return "\n".join(lines)
