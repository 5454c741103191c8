"""How much her simulated life reads like a person's: issue 12's acceptance 1 measured over three charts; JSON out.

Runs `anima simulate`'s own function (no chat, the real engine, an in-memory database kept to a temporary file
so the checks can read event and activity rows) for three charts from a Monday in January, and reports per chart
and pooled: the share of distinct event texts, bedtime SD, the share of nap days, of days with mean valence
below zero, the number of activity kinds, the weekday vs day-off L1 distance of activity shares, what she did on
the Spring Festival days, the findings of every consistency check of engine/life/checks.py (counts and a few ids,
never the sentences), and a time-use table over a year beside the China time-use survey 2018.

Usage: python bench/life_realism.py [--days 120] [--year-days 365] [--start 2026-01-05T04:00] [--charts A,B,C]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from daemon.cli.cmd_simulate import parse_start, simulate  # noqa: E402
from engine import activity as act  # noqa: E402
from engine.life import checks  # noqa: E402
from engine.life.calendar import DayKind  # noqa: E402
from engine.life.world import WorldDay, world_day  # noqa: E402
from engine.settings import Settings  # noqa: E402
from engine.usecases.simulate import read_kept_run  # noqa: E402

# The three charts of the simulate tests and the README's demo companion.
CHARTS = {"A": "1990-08-15 08:30", "B": "1985-12-01 22:10", "demo": "1998-04-12 09:30"}
DEFAULT_START = "2026-01-05T04:00"   # a Monday; chinese-calendar knows 2026, so holidays and 调休 are exact

# 国家统计局《2018年全国时间利用调查公报》(published 2019-01-25; 48,580 people in 11 provinces, one workday and one
# rest day of May 2018), residents' average day: 睡觉休息 9 h 19 min, 餐饮 1 h 44 min, 个人自由支配活动 3 h 56 min,
# 个人卫生护理 50 min, 家务劳动 1 h 26 min, 交通活动 38 min; work_study is 就业工作 2 h 57 min + 学习培训 27 min.
SURVEY_2018 = {"source": "国家统计局《2018年全国时间利用调查公报》, 2019-01-25 (second national time-use survey)",
               "minutes": {"sleep": 9 * 60 + 19, "meals": 60 + 44, "free_time": 3 * 60 + 56, "personal_care": 50,
                           "domestic": 60 + 26, "commute": 38, "work_study": 2 * 60 + 57 + 27}}
TIME_USE_ROWS = ("sleep", "meals", "work_study", "commute", "domestic", "personal_care", "free_time", "other")
# The catalogue's time-use group (`use`, when the catalogue has one) or its `category` -> a row of the table;
# anything else (a new kind, a new category) is "other", so the table always adds up to 24 h.
GROUP_ROW = {"sleep": "sleep", "meal": "meals", "work": "work_study", "learning": "work_study", "study": "work_study",
             "commute": "commute", "domestic": "domestic", "care": "personal_care", "personal_care": "personal_care",
             "leisure": "free_time", "social": "free_time", "screen": "free_time", "exercise": "free_time",
             "reading": "free_time", "creative": "free_time", "music": "free_time", "outdoor": "free_time",
             "rest": "free_time", "chat": "free_time", "festival": "free_time"}
DAY_OFF = (DayKind.WEEKEND, DayKind.HOLIDAY)


def row_of(kind: str) -> str:
    """The time-use row of an activity kind, read from the catalogue (`use` first, then `category`)."""
    spec = act.catalogue().get(kind)
    if spec is None:
        return "other"
    group = getattr(spec, "use", None) or spec.category
    return GROUP_ROW.get(str(group), "other")


def _hm(minutes: float) -> str:
    hours, rest = divmod(round(minutes), 60)
    return f"{hours}:{rest:02d}"


def run_chart(settings: Settings, birth: str, start: float, days: int, year_days: int) -> dict[str, Any]:
    """One chart: simulate max(days, year_days), read the rows back, measure."""
    tz = settings.life.tz
    zone = ZoneInfo(tz)
    city = getattr(settings.life, "city", settings.companion.demo_place)
    with tempfile.TemporaryDirectory(prefix="anima-realism-") as tmp:
        kept = Path(tmp) / "run.db"
        began = time.process_time()
        report = simulate(settings, days=max(days, year_days), start=start,
                          birth=(birth, settings.companion.demo_tz, settings.companion.bazi_sect),
                          name=settings.companion.demo_name, keep=str(kept))
        cpu_s = time.process_time() - began
        rows, events, seed = read_kept_run(kept)

    @cache
    def world(date: dt.date) -> WorldDay:
        return world_day(date, city, seed)

    window_end = start + days * 86400.0
    daily = report["daily"][:days]
    events_in = [e for e in events if e["ts"] < window_end]
    lines = checks.lines_from_rows(events_in, rows, zone)
    findings = checks.run_all(lines, world, checks.people_names())
    timeline = [a for a in report["timeline"] if a["t0"] < window_end]
    out: dict[str, Any] = {"birth": birth, "pillars": report["companion"]["pillars"], "simulate_cpu_s": round(cpu_s, 2),
                           "simulated_days": max(days, year_days), "world": {"city": city, "seed": seed}}
    texts = [e["text"] for e in events_in]
    out["life_events"] = len(texts)
    out["distinct_text_share"] = round(len(set(texts)) / len(texts), 4) if texts else None
    bed = [(d["main_sleep_t0"] - act.at_local(d["day"], act.DAY_STARTS_AT_H, tz)) / 60.0
           for d in daily if d["main_sleep_t0"] is not None]
    out["bedtime_sd_min"] = round(statistics.stdev(bed), 1) if len(bed) > 1 else None
    out["bedtime_mean"] = _hm((statistics.fmean(bed) + act.DAY_STARTS_AT_H * 60) % 1440) if bed else None
    out["nap_day_share"] = round(sum(1 for d in daily if d["minutes"].get("nap", 0) > 0) / len(daily), 4)
    means = [d["mood_v_mean"] for d in daily if d["mood_v_mean"] is not None]
    out["negative_valence_day_share"] = round(sum(1 for v in means if v < 0) / len(daily), 4)
    out["activity_kinds"] = len({a["kind"] for a in timeline})
    out["weekday_vs_day_off_l1"] = _l1(daily, world)
    out["spring_festival"] = _spring_festival(daily, timeline, world, tz)
    out["spring_festival_kinds"] = _festival_only(daily, world)
    out["findings"] = {name: {"count": len(found), "examples": [vars(f) for f in found[:5]]}
                       for name, found in findings.items()}
    out["findings_total"] = sum(len(found) for found in findings.values())
    out["time_use"] = _time_use(report["timeline"], start, year_days)
    return out


def _l1(daily: list[dict[str, Any]], world: Any) -> dict[str, Any]:
    """L1 distance (0..2) between her waking-time shares per kind on workdays and on days off (sleep left out)."""
    groups: dict[str, Counter[str]] = {"workday": Counter(), "day_off": Counter()}
    counts = Counter()
    for d in daily:
        side = "day_off" if world(dt.date.fromisoformat(d["day"])).day_kind in DAY_OFF else "workday"
        counts[side] += 1
        groups[side].update({k: m for k, m in d["minutes"].items() if k != "sleep"})
    if not all(sum(g.values()) for g in groups.values()):
        return {"l1": None, "days": dict(counts)}
    shares = {side: {k: m / sum(g.values()) for k, m in g.items()} for side, g in groups.items()}
    kinds = set(shares["workday"]) | set(shares["day_off"])
    l1 = sum(abs(shares["workday"].get(k, 0.0) - shares["day_off"].get(k, 0.0)) for k in kinds)
    return {"l1": round(l1, 4), "days": dict(counts)}


def _spring_festival(daily: list[dict[str, Any]], timeline: list[dict[str, Any]], world: Any,
                     tz: str) -> list[dict[str, Any]]:
    """Each day of 除夕..初六 in the run: its festival and what she did (kinds with minutes, not the sentences)."""
    out = []
    for d in daily:
        today = world(dt.date.fromisoformat(d["day"]))
        if not today.spring_festival:
            continue
        awake = {k: m for k, m in sorted(d["minutes"].items(), key=lambda kv: -kv[1]) if k != "sleep"}
        lo = act.at_local(d["day"], act.DAY_STARTS_AT_H, tz)
        labels = [a["label"] for a in timeline if lo <= a["t0"] < lo + 86400.0 and a["kind"] != "sleep"]
        out.append({"day": d["day"], "festival": today.festival, "holiday": today.holiday,
                    "day_kind": today.day_kind.value, "minutes": awake, "sequence": labels})
    return out


def _festival_only(daily: list[dict[str, Any]], world: Any) -> list[str]:
    """Kinds she does on the Spring Festival days and on under 5 % of her other days: the festival lived as one."""
    festive = [d for d in daily if world(dt.date.fromisoformat(d["day"])).spring_festival]
    ordinary = [d for d in daily if not world(dt.date.fromisoformat(d["day"])).spring_festival]
    seen = Counter(k for d in ordinary for k in d["minutes"])
    kinds = {k for d in festive for k in d["minutes"]}
    return sorted(k for k in kinds if seen[k] < 0.05 * max(1, len(ordinary)))


def _time_use(timeline: list[dict[str, Any]], start: float, days: int) -> dict[str, Any]:
    """Average minutes a day per time-use row over `days` days from `start` (activities clipped to the window)."""
    end = start + days * 86400.0
    minutes: Counter[str] = Counter()
    for a in timeline:
        lo, hi = max(a["t0"], start), min(a["t1"], end)
        if hi > lo:
            minutes[row_of(a["kind"])] += (hi - lo) / 60.0
    per_day = {row: minutes.get(row, 0.0) / days for row in TIME_USE_ROWS}
    return {row: {"minutes": round(m, 1), "hm": _hm(m),
                  "survey_2018": _hm(SURVEY_2018["minutes"][row]) if row in SURVEY_2018["minutes"] else None}
            for row, m in per_day.items()}


def _pooled(charts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def mean(key: str) -> float | None:
        values = [c[key] for c in charts.values() if c.get(key) is not None]
        return round(statistics.fmean(values), 4) if values else None

    l1 = [c["weekday_vs_day_off_l1"]["l1"] for c in charts.values() if c["weekday_vs_day_off_l1"]["l1"] is not None]
    rows = {row: round(statistics.fmean(c["time_use"][row]["minutes"] for c in charts.values()), 1)
            for row in TIME_USE_ROWS}
    return {"distinct_text_share": mean("distinct_text_share"), "bedtime_sd_min": mean("bedtime_sd_min"),
            "nap_day_share": mean("nap_day_share"), "negative_valence_day_share": mean("negative_valence_day_share"),
            "activity_kinds_min": min(c["activity_kinds"] for c in charts.values()),
            "weekday_vs_day_off_l1": round(statistics.fmean(l1), 4) if l1 else None,
            "findings_total": sum(c["findings_total"] for c in charts.values()),
            "findings_by_check": {name: sum(c["findings"][name]["count"] for c in charts.values())
                                  for name in checks.CHECKS},
            "time_use_minutes": rows,
            "time_use_hm": {row: _hm(m) for row, m in rows.items()}}


def acceptance(pooled: dict[str, Any], charts: dict[str, dict[str, Any]]) -> dict[str, bool | None]:
    """Issue 12, acceptance 1, item by item (None where nothing could be measured)."""
    def within(value: float | None, lo: float, hi: float) -> bool | None:
        return None if value is None else lo <= value <= hi

    def lived(c: dict[str, Any]) -> bool:
        days = c["spring_festival"]
        return bool(days) and all(d["day_kind"] == DayKind.HOLIDAY.value for d in days) and bool(
            c["spring_festival_kinds"])

    return {"distinct_texts_ge_60pct": within(pooled["distinct_text_share"], 0.60, 1.0),
            "bedtime_sd_20_60_min": all(within(c["bedtime_sd_min"], 20, 60) for c in charts.values()),
            "naps_5_30pct_days": all(within(c["nap_day_share"], 0.05, 0.30) for c in charts.values()),
            "negative_days_ge_3pct": all(within(c["negative_valence_day_share"], 0.03, 1.0) for c in charts.values()),
            "kinds_ge_25": pooled["activity_kinds_min"] >= 25,
            "weekday_weekend_l1_ge_0_2": all(within(c["weekday_vs_day_off_l1"]["l1"], 0.2, 2.0)
                                             for c in charts.values()),
            "spring_festival_lived": all(lived(c) for c in charts.values()),
            "zero_findings": pooled["findings_total"] == 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--year-days", type=int, default=365, help="days of the time-use table (default 365)")
    parser.add_argument("--start", default=DEFAULT_START)
    parser.add_argument("--charts", default=",".join(CHARTS), help=f"comma-separated, of {', '.join(CHARTS)}")
    args = parser.parse_args()
    settings = Settings()
    start = parse_start(args.start, settings.life.tz)
    names = [n for n in args.charts.split(",") if n]
    unknown = [n for n in names if n not in CHARTS]
    if unknown:
        parser.error(f"unknown chart(s) {unknown}; known: {', '.join(CHARTS)}")
    charts = {name: run_chart(settings, CHARTS[name], start, args.days, args.year_days) for name in names}
    pooled = _pooled(charts)
    print(json.dumps({"bench": "life_realism", "start": args.start, "days": args.days, "year_days": args.year_days,
                      "survey_2018": SURVEY_2018, "pooled": pooled, "acceptance": acceptance(pooled, charts),
                      "charts": charts}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
