"""`anima simulate`: run her life for N days at full speed on a temporary database with an injected clock.

For persona designers and tests: the output (timeline, life events, daily summaries) depends only
on the chart, the settings and --start, so two runs are byte-identical. The real database is only
read (for her birth facts); everything is written to a throwaway file, or to a new file named by
--keep, which `anima --db FILE life/mood` can then read. --plot draws the run for people.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib.util
import json
import sys
import time
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from daemon.cli.env import CliEnv
from engine import activity as act
from engine.errors import ConfigError, InputError, StoreError
from engine.home import Home, choose_home, default_home, home_of, settings_for
from engine.memory.importer import load_history_turns
from engine.memory.ingest import TurnInput, parse_ts
from engine.persona import Persona, describe_persona, persona_of_companion
from engine.settings import Settings
from engine.times import parse_instant
from engine.usecases.files import copy_into_new, open_readonly, open_scratch
from engine.usecases.inspect import companion_of
from engine.usecases.simulate import life_between, run_life

DEFAULT_START = "2025-01-06T04:00"   # a Monday at 04:00, when her day turns; fixed so runs are reproducible
TAIL_H = 12.0                          # run past the last day so its night is complete
MAX_DAYS = 366


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("simulate", help="run her life for N days at full speed on a temporary DB")
    parser.add_argument("--days", type=int, default=7, help="how many days (default 7)")
    parser.add_argument("--start", default=DEFAULT_START,
                        help=f"start instant, ISO 8601; without an offset it is in [life] tz (default {DEFAULT_START})")
    parser.add_argument("--chart-birth", help='use this birth instead of the database companion: "YYYY-MM-DD HH:MM"')
    parser.add_argument("--step-s", type=float, default=300.0, help="heartbeat of the simulation in seconds (default 300)")
    parser.add_argument("--keep", metavar="DB", help="write the run to this new database file and keep it")
    parser.add_argument("--plot", metavar="PNG", help="draw the run's mood, energy and activities to this PNG")
    parser.add_argument("--chat", metavar="FILE",
                        help="play these turns (JSON Lines: ts, turn_id, role, text) at their instants, through the "
                             "same use case as POST /v1/turns")
    parser.add_argument("--city", help="simulate her living in this city (default: her file's, else [life] city)")
    parser.add_argument("--role", help="simulate her in this role, e.g. 中学老师 (default: her file's, else [life] role)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(func=handle)


def parse_start(text: str, tz: str) -> float:
    return parse_instant(text, "--start", tz)


def simulate(settings: Settings, *, days: int, start: float, birth: tuple[str, str, int], name: str,
             step_s: float = 300.0, keep: str | None = None, plot: str | None = None,
             forecast_next: bool = False, chat: str | None = None,
             progress: Callable[[int, int], None] | None = None, home: Home | None = None) -> dict[str, Any]:
    """Run `days` of her life from `start` for the companion born at `birth` = (local, tz, sect).

    `keep` names a new database file to write and keep; `plot` a PNG to draw the run into. `forecast_next`
    also forecasts each activity's successor (activity.next_kind) as the daemon does; off by default, since
    nobody reads a forecast mid-run and the life is the same without it (a test checks both). `chat` names a
    JSON Lines file of turns (the `anima ingest` format) played at their instants through
    engine.usecases.turns.record_turn, the use case of POST /v1/turns (issue 24: what a conversation does to
    her days); a bad line or a turn outside the run is an InputError before anything runs. `home` is her
    city, zone and role (engine/home.py; default [life]'s), stored in the simulated file as init stores it.
    """
    from engine.companion import create_companion
    from engine.inner import resume_after_gap

    if not 1 <= days <= MAX_DAYS:
        raise InputError(f"--days must be from 1 to {MAX_DAYS}, got {days}")
    if not 1.0 <= step_s <= 3600.0:
        raise InputError(f"--step-s must be from 1 to 3600 seconds, got {step_s}")
    home = home or default_home(settings)
    settings = settings_for(settings, home)
    tz = settings.life.tz
    end = start + days * 86400.0
    stop = end + TAIL_H * 3600.0
    turns = _chat_turns(chat, settings, start, stop) if chat else []
    # The kept file holds the whole run: trace retention counts back from the simulated now, so a
    # run longer than [life] trace_retention_days would otherwise prune its own beginning.
    run_days = (stop - start) / 86400.0 + 1.0
    if settings.life.trace_retention_days < run_days:
        settings = dataclasses.replace(settings, life=dataclasses.replace(settings.life,
                                                                          trace_retention_days=run_days))
    with _database(keep) as target:
        # The run lives in RAM and is copied to --keep once at the end: a file buys nothing while it runs.
        conn = open_scratch(start)
        try:
            companion = create_companion(conn, name=name, birth_local=birth[0], tz=birth[1], place=None,
                                         sect=birth[2], now=start, home=home)
            persona = persona_of_companion(companion)
            if persona is None:   # just created, so never; said for the type checker and for a broken chart
                raise StoreError("the simulated companion has no persona")
            resume_after_gap(conn, settings, persona, None, start)
            with _few_collections():
                trace = run_life(conn, settings, persona, start, stop, step_s, forecast_next, turns, progress,
                                 _chat_embedder(settings) if turns else None)
            rows, events = life_between(conn, start, stop)
            if target is not None:
                copy_into_new(conn, target)  # the finished run, into the new private file
            if plot:
                from daemon.plot import draw_life, note_missing_font

                note_missing_font(draw_life(plot, trace, rows, [e for e in events if e["told"]], tz, name=name,
                                            simulated=True))
        finally:
            conn.close()
    report = _report(companion, persona, rows, events, trace, start, days, tz)
    report["home"] = home.to_dict()   # where she lived the run and as what (engine/home.py)
    return report


@contextmanager
def _few_collections() -> Iterator[None]:
    """Run with the cyclic garbage collector rarely woken; restore it after.

    A simulated year allocates millions of short-lived values (frozen states, tuples, dicts) that form no
    cycles, so reference counting frees them; at the default gen-0 threshold (700) the collector still
    wakes thousands of times to re-walk every long-lived object (modules, the catalogue, the grammar).
    Freezing what exists before the run and raising the threshold cut a year's CPU by ~15 % (paired runs).
    """
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def _chat_turns(path: str, settings: Settings, start: float, stop: float) -> list[tuple[float, TurnInput]]:
    """The turns of a chat script in time order, each with its instant (its user line's ts); all checked first."""
    turns = [(parse_ts(turn.ts_iso), turn) for turn in
             load_history_turns(path, max_text_chars=settings.memory.max_text_chars)]
    for at, turn in turns:
        if not start <= at < stop:
            raise InputError(f"--chat {path}: turn {turn.turn_id} at {turn.ts_iso} is outside the simulated run "
                             f"({_iso(start, settings.life.tz)} to {_iso(stop, settings.life.tz)})")
    return sorted(turns, key=lambda pair: pair[0])


def _chat_embedder(settings: Settings) -> Any:
    """The configured embedder, for the model check of a recorded turn; no vector is computed in a run (the
    daemon's indexer would do that later), so the model is never run."""
    from engine.memory.embed import make_embedder

    return make_embedder(settings.memory)


def day_progress(stream: Any = None, every_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> Callable[[int, int], None]:
    """'simulated 120/367 days' on stderr at most once a second (issue 25: a year said nothing for 30 s):
    redrawn in place on a terminal, one line each elsewhere."""
    out = stream or sys.stderr
    last = [clock()]
    tty = bool(getattr(out, "isatty", lambda: False)())

    def show(done: int, total: int) -> None:
        now = clock()
        if done < total and now - last[0] < every_s:
            return
        last[0] = now
        line = f"simulated {done}/{total} days"
        out.write(f"\r{line}" + ("\n" if done >= total else "") if tty else line + "\n")
        out.flush()

    return show


@contextmanager
def _database(keep: str | None) -> Iterator[Path | None]:
    """The new file the run is kept in (checked before the run, so a bad name costs nothing), or None."""
    if keep:
        path = Path(keep)
        if path.exists():
            raise InputError(f"--keep {keep}: the file exists; name a new file (a run never overwrites a database)")
        if not path.parent.is_dir():
            raise InputError(f"--keep {keep}: the directory {path.parent} does not exist")
        yield path
        return
    yield None


def _iso(t: float, tz: str) -> str:
    return act.local_time(t, tz).strftime("%Y-%m-%dT%H:%M:%S%z")


def _hm(t: float, tz: str) -> str:
    return act.local_time(t, tz).strftime("%H:%M")


def _report(companion: dict[str, Any], persona: Persona, rows: list[dict[str, Any]], events: list[dict[str, Any]],
            trace: list[dict[str, Any]], start: float, days: int, tz: str) -> dict[str, Any]:
    timeline = []
    for r in rows:
        ended = r["ended_at"] if r["ended_at"] is not None else r["expected_end"]
        timeline.append({"start": _iso(r["started_at"], tz), "end": _iso(ended, tz), "kind": r["kind"],
                         "label": r["label"], "why": r["why"], "status": r["status"],
                         "t0": round(r["started_at"], 3), "t1": round(ended, 3)})
    first_day = act.day_of(start, tz)
    starts, stamps = [a["t0"] for a in timeline], [p["ts"] for p in trace]   # both in time order
    daily = [_day_summary((datetime.fromisoformat(first_day) + timedelta(days=i)).date().isoformat(),
                          timeline, starts, trace, stamps, tz) for i in range(days)]
    return {
        "companion": {"name": companion["name"], "birth": companion["birth_local"], "tz": companion["birth_tz"],
                      "pillars": companion["chart"]["pillars"], "day_master": companion["chart"]["day_master"]},
        "persona": describe_persona(companion["chart"], persona),
        "chronotype_shift_h": persona.chronotype_shift_h,
        "start": _iso(start, tz),
        "days": days,
        "timeline": timeline,
        "life_events": [{"ts": _iso(e["ts"], tz), "kind": e["kind"], "text": e["text"]} for e in events],
        "daily": daily,
    }


def _between(items: list[dict[str, Any]], keys: list[float], lo: float, hi: float) -> list[dict[str, Any]]:
    """The items whose sorted key lies in [lo, hi): a slice, so a year's summary is not days x points."""
    return items[bisect_left(keys, lo):bisect_left(keys, hi)]


def _day_summary(day: str, timeline: list[dict[str, Any]], starts: list[float], trace: list[dict[str, Any]],
                 stamps: list[float], tz: str) -> dict[str, Any]:
    lo = act.at_local(day, act.DAY_STARTS_AT_H, tz)
    hi = lo + 86400.0
    in_day = _between(timeline, starts, lo, hi)
    # Night sleeps start after noon of her day (the morning end of last night's sleep belongs to yesterday).
    sleeps = [a for a in in_day if a["kind"] == "sleep" and a["t0"] >= lo + 8 * 3600]
    main = max(sleeps, key=lambda a: a["t1"] - a["t0"]) if sleeps else None
    woke = [a["t1"] for a in _between(timeline, starts, lo - 12 * 3600, lo + 8 * 3600) if a["kind"] == "sleep"]
    wake_at = min(woke) if woke else lo
    minutes: Counter[str] = Counter()
    for a in in_day:
        minutes[a["kind"]] += round((a["t1"] - a["t0"]) / 60.0)
    awake = _between(trace, stamps, wake_at, main["t0"] if main else hi)
    summary: dict[str, Any] = {
        "day": day,
        "wake": _hm(wake_at, tz),
        "sleep_start": _hm(main["t0"], tz) if main else None,
        "sleep_end": _hm(main["t1"], tz) if main else None,
        "sleep_h": round((main["t1"] - main["t0"]) / 3600.0, 3) if main else 0.0,
        "main_sleep_t0": main["t0"] if main else None,
        "sleeps": len(sleeps),
        "meals": [a["kind"] for a in in_day if a["kind"] in act.MEALS],
        "minutes": dict(sorted(minutes.items())),
        "mood_v_mean": round(sum(p["v"] for p in awake) / len(awake), 4) if awake else None,
    }
    if awake:
        low = min(awake, key=lambda p: (p["e"], p["ts"]))
        high = max(awake, key=lambda p: (p["e"], -p["ts"]))
        summary.update({"energy_min": round(low["e"], 4), "energy_min_at": _hm(low["ts"], tz),
                        "energy_min_ts": low["ts"], "energy_max": round(high["e"], 4),
                        "energy_max_at": _hm(high["ts"], tz), "energy_max_ts": high["ts"]})
    return summary


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    settings = env.settings
    home = None
    sect = settings.companion.bazi_sect
    name = settings.companion.demo_name
    birth = (settings.companion.demo_birth, settings.companion.demo_tz, sect)
    if args.chart_birth:
        birth = (args.chart_birth, settings.companion.demo_tz, sect)
    elif env.db_path.exists():
        conn = open_readonly(env.db_path)
        try:
            companion = companion_of(conn)
        except Exception:
            companion = None
        finally:
            conn.close()
        if companion:
            birth = (companion["birth_local"], companion["birth_tz"], int(companion["bazi_sect"]))
            name = companion["name"]
            home = home_of(companion, settings)
    if args.city is not None or args.role is not None:
        base = home or default_home(settings)
        home = choose_home(settings_for(settings, base), city_name=args.city, role_name=args.role)
    start = parse_start(args.start, (home or default_home(settings)).tz)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise ConfigError("--plot needs matplotlib: pip install 'anima[plot]'")   # before the run, not after it
    if args.keep and Path(args.keep).resolve() == env.db_path.resolve():
        raise InputError("--keep must name a new file, not the real database")
    report = simulate(settings, days=args.days, start=start, birth=birth, name=name, step_s=args.step_s,
                      keep=args.keep, plot=args.plot, chat=args.chat, progress=day_progress(), home=home)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, sort_keys=True))
        return 0
    _print_text(report)
    return 0


def _print_text(report: dict[str, Any]) -> None:
    c = report["companion"]
    print(f"{c['name']}  {' '.join(c['pillars'][p] for p in ('year', 'month', 'day', 'time'))}  "
          f"from {report['start']} for {report['days']} days")
    home = report.get("home")
    if home:
        print(f"  lives in {home['city']} ({home['tz']}), works as {home['role_title']}")
    for key, value in report["persona"].items():
        print(f"  {key}: {value}")
    day = None
    for a in report["timeline"]:
        if a["start"][:10] != day:
            day = a["start"][:10]
            print(f"\n{day}")
        why = act.WHY_ZH.get(a["why"], a["why"])
        mark = "" if a["status"] == "done" else f" [{a['status']}]"
        print(f"  {a['start'][11:16]}-{a['end'][11:16]}  {a['label']}（{why}）{mark}")
    print("\ndaily summary")
    for d in report["daily"]:
        print(f"  {d['day']}  wake {d['wake']}  sleep {d['sleep_start']}-{d['sleep_end']} ({d['sleep_h']:.1f} h)  "
              f"meals {len(d['meals'])}  energy low {d.get('energy_min_at')} high {d.get('energy_max_at')}  "
              f"mood V {d['mood_v_mean']}")
