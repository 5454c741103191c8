"""Whether her feelings show in her days (issue 24, acceptance 2 and 6): JSON out, paired against another tree.

For 120 days from 2025-01-06 and two charts, runs `anima simulate`'s own function (real engine, no chat) and
reports per chart: the share of sentences that end on one of the eight flat stock tails (target <= 8 %), the
share of negatively worded sentences on her ten lowest-valence days and on her ten highest (target >= 15 % and
>= 3x), the SD of arousal and dominance over the run's trace (targets >= 0.05 and >= 0.04), the evenings with two
dinners (engine/life/slips.py; target <= 1), and the CPU seconds of the run; across the two charts, the books and
series both read or watched, as a share of the fewer (target <= 50 %), and likewise the names of her friends
(everyone in her cast but her parents) named in the run (issue 24 item 3; target well under 50 %). With `--paired TREE` the same script measures TREE (a checkout of another version, e.g. /work/base)
in a child process, under the same conditions, and prints both.

Usage: python bench/feelings_show.py [--days 120] [--start 2025-01-06T04:00] [--paired /work/base] [--tree DIR]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHARTS = {"A": "1990-08-15 08:30", "B": "1985-12-01 22:10"}
# The eight resigned tails the issue counted in about half of all sentences.
STOCK_TAILS = ("也还行", "平平常常的", "心里很平静", "说不上好也说不上坏", "就这么过去了", "没什么波澜", "不咸不淡的",
               "日子就是这样")
# Words that make a sentence read as negatively felt (a low mood, a loss, worry, tiredness, a letdown); each is
# specific enough not to match weather or titles (天阴沉沉的, 《生死疲劳》 are not her feelings).
NEGATIVE_MARKERS = ("难过", "心疼", "担心", "委屈", "失落", "泄气", "空落落", "心里有点闷", "提不起", "情绪不太高",
                    "心里沉沉", "心里一沉", "堵着", "鼻子就有点酸", "不踏实", "生气", "疲惫", "都是疲的", "累得",
                    "有点累", "懊恼", "心里更乱", "不太专心", "想找人说说话", "睡不着", "没心思", "失望", "心里有点沉",
                    "看得心里有点沉", "酸酸的", "空了一块", "不太想说话", "揪着", "走神")
DAY_TURNS_AT_H = 4


def _day_of(iso: str) -> str:
    return (dt.datetime.fromisoformat(iso) - dt.timedelta(hours=DAY_TURNS_AT_H)).date().isoformat()


def measure(tree: str, days: int, start_text: str) -> dict[str, Any]:
    """Every figure for the tree on sys.path[0]: one simulate run per chart."""
    from daemon.cli.cmd_simulate import parse_start, simulate
    from engine.settings import Settings
    from engine.store import connect
    from engine.store import life as store

    settings = Settings()
    start = parse_start(start_text, settings.life.tz)
    out: dict[str, Any] = {"tree": tree, "days": days, "start": start_text, "charts": {}}
    titles: dict[str, set[str]] = {}
    friends: dict[str, set[str]] = {}
    for chart, birth in CHARTS.items():
        with tempfile.TemporaryDirectory(prefix="anima-feel-") as tmp:
            kept = Path(tmp) / "run.db"
            began = time.process_time()
            report = simulate(settings, days=days, start=start,
                              birth=(birth, settings.companion.demo_tz, settings.companion.bazi_sect),
                              name=settings.companion.demo_name, keep=str(kept))
            cpu_s = time.process_time() - began
            conn = connect(kept)
            try:
                trace = store.trace(conn, start, start + days * 86400.0)
                events = store.life_events(conn, told_only=False)
                rows = store.activities(conn, -1e18, 1e18)
            finally:
                conn.close()
        out["charts"][chart] = _figures(report, trace, cpu_s)
        out["charts"][chart]["two_dinner_evenings"] = _two_dinners(events, rows, settings.life.tz)
        out["charts"][chart].update(_routine(rows, settings.life.tz))
        titles[chart] = _titles(report)
        friends[chart] = _friend_names(report)
    a, b = (titles[c] for c in CHARTS)
    out["books_shows"] = {c: len(t) for c, t in titles.items()}
    out["books_shows_shared"] = len(a & b)
    out["books_shows_overlap"] = round(len(a & b) / min(len(a), len(b)), 4) if a and b else None
    fa, fb = (friends[c] for c in CHARTS)
    out["friend_names"] = {c: sorted(n) for c, n in friends.items()}
    out["friend_names_overlap"] = round(len(fa & fb) / min(len(fa), len(fb)), 4) if fa and fb else None
    return out


def _two_dinners(events: list[dict[str, Any]], rows: list[dict[str, Any]], tz: str) -> int | None:
    """Evenings with two dinners (engine/life/slips.py when the tree has it; None for a tree without)."""
    from zoneinfo import ZoneInfo

    try:
        from engine.life import slips
    except ImportError:
        slips = None
    from engine.life.checks import lines_from_rows

    lines = lines_from_rows(events, rows, ZoneInfo(tz))
    if slips is None:
        return None
    return len({f.why.split(" after ")[0] for f in slips.check_dinners(lines)})


def _routine(rows: list[dict[str, Any]], tz: str) -> dict[str, Any]:
    """A less ideal routine (issue 24 item 5): the share of workdays she leaves the studio at 18:00 sharp (the
    ride home starting within a minute of it), and the days with a 午休, a skipped breakfast, phone time and a
    cold (counted from the activities and the day plan's marks that reach them)."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(tz)
    home = [dt.datetime.fromtimestamp(float(r["started_at"]), zone) for r in rows
            if r["kind"] == "commute" and r["detail"].get("anchor") == "commute_pm"]
    sharp = sum(1 for t in home if t.hour == 18 and t.minute == 0 or (t.hour == 17 and t.minute == 59))
    desk = {_day_of(dt.datetime.fromtimestamp(float(r["started_at"]), zone).isoformat()) for r in rows
            if r["kind"] == "nap" and r["detail"].get("place") == "工位"}
    phone = {_day_of(dt.datetime.fromtimestamp(float(r["started_at"]), zone).isoformat()) for r in rows
             if r["kind"] == "phone"}
    return {"workdays_home": len(home), "leaves_at_18_share": round(sharp / len(home), 4) if home else None,
            "desk_nap_days": len(desk), "phone_days": len(phone)}


def _titles(report: dict[str, Any]) -> set[str]:
    """The books and series she read or watched in the run (titles of the narration's story tables)."""
    import re

    from engine.life.grammar import grammar

    story = grammar().data["story"]
    known = {str(x["title"]) for x in (*story["book"], *story["show"])}
    return {t for e in report["life_events"] for t in re.findall(r"《([^》]+)》", e["text"]) if t in known}


def _friend_names(report: dict[str, Any]) -> set[str]:
    """Her friends' names said in the run: every name of the cast file (and its per-companion pools) but her
    parents', found in her sentences."""
    import tomllib
    from importlib import resources

    raw = tomllib.loads((resources.files("engine") / "data" / "cast.toml").read_text(encoding="utf-8"))
    known = {str(n) for m in raw.get("member", {}).values() if m.get("relation") not in ("mother", "father")
             for n in (m.get("name"), *m.get("names", ())) if n}
    import re

    text = "\n".join(e["text"] for e in report["life_events"])
    # said as a person (和小雨, 小雨说), not as the weather (外面下着小雨); the longest first, so that 老同学阿琪 is
    # not also counted as 阿琪
    found: set[str] = set()
    for name in sorted(known, key=len, reverse=True):
        if re.search(f"(和|跟|约|给|陪){name}|{name}说", text) and not any(name in f for f in found):
            found.add(name)
    return found


def _figures(report: dict[str, Any], trace: list[dict[str, Any]], cpu_s: float) -> dict[str, Any]:
    events = report["life_events"]
    texts = [e["text"] for e in events]
    tails = sum(1 for t in texts if t.rstrip("。！").endswith(STOCK_TAILS))
    by_day: dict[str, list[str]] = {}
    for e in events:
        by_day.setdefault(_day_of(e["ts"]), []).append(e["text"])
    daily = [d for d in report["daily"] if d["mood_v_mean"] is not None and by_day.get(d["day"])]
    ranked = sorted(daily, key=lambda d: d["mood_v_mean"])
    low, high = ranked[:10], ranked[-10:]

    def neg_share(days: list[dict[str, Any]]) -> float:
        said = [t for d in days for t in by_day[d["day"]]]
        return round(sum(1 for t in said if any(m in t for m in NEGATIVE_MARKERS)) / len(said), 4) if said else 0.0

    low_share, high_share = neg_share(low), neg_share(high)
    return {
        "sentences": len(texts),
        "stock_tail_share": round(tails / len(texts), 4) if texts else None,
        "negative_share_lowest10": low_share,
        "negative_share_highest10": high_share,
        "negative_low_over_high": round(low_share / high_share, 2) if high_share else None,
        "negative_share_all": round(sum(1 for t in texts if any(m in t for m in NEGATIVE_MARKERS)) / len(texts), 4),
        "valence_day_mean_sd": round(statistics.pstdev([d["mood_v_mean"] for d in daily]), 4) if daily else None,
        "arousal_sd": round(statistics.pstdev([p["a"] for p in trace]), 4) if trace else None,
        "dominance_sd": round(statistics.pstdev([p["d"] for p in trace]), 4) if trace else None,
        "simulate_cpu_s": round(cpu_s, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--start", default="2025-01-06T04:00")
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]),
                        help="the checkout to measure (default: this one)")
    parser.add_argument("--paired", metavar="TREE", help="also measure this checkout, in a child process")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.tree)
    result: dict[str, Any] = {"this": measure(args.tree, args.days, args.start)}
    if args.paired:
        env = {**os.environ, "PYTHONPATH": args.paired}
        child = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--tree", args.paired, "--days",
                                str(args.days), "--start", args.start], env=env, cwd=args.paired, check=True,
                               capture_output=True, text=True)
        result["paired"] = json.loads(child.stdout)["this"]
    print(json.dumps(result, ensure_ascii=False, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
