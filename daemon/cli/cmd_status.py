"""`anima status`: who she is, whether her daemon is alive, and how she is right now."""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from daemon.cli.env import CliEnv
from daemon.cli.served import served_by
from daemon.replication import companion_files
from engine.home import her_settings, home_of
from engine.jobs import status_counts
from engine.usecases.files import daemon_running, open_readonly, schema_versions, sqlite_driver
from engine.usecases.inspect import companion_of, daemon_record, switch_values


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("status", help="companion, daemon liveness, mood, activity, jobs, switches")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", default=None,
                        help="a companions directory: one line for each of its companions (read-only)")
    parser.set_defaults(func=handle)


def collect(conn: Any, env: CliEnv) -> dict[str, Any]:
    companion = companion_of(conn)
    state = daemon_record(conn)
    wall = time.time()
    locked = daemon_running(env.db_path)
    last_wall = state.get("last_beat_wall")
    served = served_by(conn)
    have, want = schema_versions(conn)
    alive = bool(locked and last_wall is not None and served.is_fresh(wall - last_wall, env.settings.heartbeat))
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
            "served_by": served.mode,
            "beat_s": served.beat_s or env.settings.heartbeat.interval_s,
            "socket": str(served.socket) if served.socket else None,
        },
        "schema": {"db": have, "code": want},
        "sqlite_driver": sqlite_driver(),
        "controls": switch_values(conn),
    }
    if companion:
        chart = companion["chart"]
        report["companion"] = {
            "name": companion["name"],
            "birth": companion["birth_local"],
            "tz": companion["birth_tz"],
            "home": home_of(companion, env.settings).to_dict(),
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
    hers = her_settings(env.settings, companion)   # her zone and city (a directory's companions each have theirs)
    return {"inner": inner_snapshot(conn, hers, persona, env.clock.now())}


def _jobs(conn: Any) -> dict[str, Any]:
    return {"jobs": status_counts(conn)}


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    if args.dir:
        return handle_dir(Path(args.dir), env, args.json)
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
                     f"day master {companion['day_master'] or '?'}")
        home = companion.get("home")
        if home:
            lines.append(f"lives in {home['city']} ({home['tz']}), works as {home['role_title']}")
    else:
        lines.append("no companion yet (anima init, or anima run creates a demo companion)")
    daemon = report["daemon"]
    if daemon["alive"]:
        host = " (served by a directory host)" if daemon.get("served_by") == "directory" else ""
        lines.append(f"daemon: alive{host}, pid {daemon['pid']}, up {daemon['uptime_s'] or 0} s, "
                     f"last beat {daemon['seconds_since_beat']} s ago (every {daemon['beat_s']:g} s), "
                     f"lag {daemon['loop_lag_ms'] or 0:.0f} ms")
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
                         f"(why: {act['why'] or '-'}; next: {act['next'] or 'not planned yet'})")
    jobs = report.get("jobs") or {}
    lines.append("jobs: " + (", ".join(f"{k} {v}" for k, v in sorted(jobs.items())) or "none"))
    lines.append(f"schema {report['schema']['db']} (code {report['schema']['code']}), {report['sqlite_driver']}")
    lines.append("switches: " + ", ".join(f"{k}={'on' if v is True else 'off' if v is False else v}"
                                         for k, v in report["controls"].items()))
    return "\n".join(lines)


def summary_row(db: Path, env: CliEnv) -> dict[str, Any]:
    """One companion of a directory, read-only (nothing migrated, nothing written: a host may be serving her)."""
    row: dict[str, Any] = {"companion": db.stem, "db": str(db)}
    try:
        conn = open_readonly(db)
    except Exception as exc:
        return {**row, "error": f"cannot open: {type(exc).__name__}"}
    try:
        report = collect(conn, dataclasses.replace(env, db_path=db))
    except Exception as exc:  # not an anima file, damaged, a newer schema: said on her line, the others go on
        return {**row, "error": f"cannot read: {type(exc).__name__}"}
    finally:
        conn.close()
    inner = report.get("inner") or {}
    mood = inner.get("mood") or {}
    return {**row, "name": (report["companion"] or {}).get("name"), "home": (report["companion"] or {}).get("home"),
            "alive": report["daemon"]["alive"],
            "locked": report["daemon"]["locked"], "seconds_since_beat": report["daemon"]["seconds_since_beat"],
            "beat_s": report["daemon"]["beat_s"], "mood": mood.get("label"), "energy": inner.get("energy"),
            "jobs": report.get("jobs") or {}, "schema": report["schema"]["db"]}


def handle_dir(folder: Path, env: CliEnv, as_json: bool) -> int:
    """`anima status --dir DIR`: every companion of the directory, one line each, then the totals."""
    rows = [summary_row(db, env) for db in companion_files(folder)]
    if as_json:
        env.print_json({"dir": str(folder), "companions": rows})
        return 0
    for row in rows:
        print(render_row(row))
    alive = sum(1 for r in rows if r.get("alive"))
    broken = sum(1 for r in rows if "error" in r)
    print(f"{len(rows)} companion(s): {alive} alive, {len(rows) - alive - broken} not running, {broken} unreadable")
    return 0


def render_row(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['companion']:<20} {row['error']}"
    if row["alive"]:
        state = f"alive, last beat {row['seconds_since_beat']:.0f} s ago (every {row['beat_s']:g} s)"
    else:
        state = "not running" + (" (lock held but no recent beat)" if row["locked"] else "")
    jobs = row["jobs"]
    mood = f"{row['mood']} energy {row['energy']:.2f}" if row["mood"] and row["energy"] is not None else "-"
    return (f"{row['companion']:<20} {row['name'] or '(no companion yet)'}  {state}  {mood}  "
            f"jobs queued {jobs.get('queued', 0)} running {jobs.get('running', 0)} failed {jobs.get('failed', 0)}")
