"""Her world over a year of one city: day kinds, festivals, weather per month, sunrise range, cost per day; JSON out.

Evidence for issue 12 ("her world, computed"): the calendar sees holidays and 调休, the sun moves with the
seasons, rain comes in spells with the climate table's monthly shares, snow only where and when it can.

Usage: python bench/world_year.py [--city 杭州] [--start 2026-01-01] [--days 365] [--seed companion-1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.life.place import WEATHERS, city  # noqa: E402
from engine.life.world import world_day  # noqa: E402


def _clock(moment: dt.datetime) -> str:
    return moment.strftime("%H:%M")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--city", default="杭州")
    parser.add_argument("--start", default="2026-01-01", type=dt.date.fromisoformat)
    parser.add_argument("--days", default=365, type=int)
    parser.add_argument("--seed", default="companion-1")
    args = parser.parse_args()
    home = city(args.city)
    started = time.process_time()
    days = [world_day(args.start + dt.timedelta(days=i), home, args.seed) for i in range(args.days)]
    cpu_s = time.process_time() - started

    kinds = Counter(d.day_kind.value for d in days)
    by_month: dict[str, Counter[str]] = {}
    for d in days:
        by_month.setdefault(f"{d.date.year}-{d.date.month:02d}", Counter())[d.weather] += 1
    wet = {"小雨", "大雨", "雪"}
    rain_days = {month: sum(n for kind, n in counts.items() if kind in wet) for month, counts in by_month.items()}
    table_rain = {
        month: round(sum(home.climate(int(month[5:])).weather_share[WEATHERS.index(k)] for k in wet)
                     * sum(counts.values()), 1)
        for month, counts in by_month.items()
    }
    spells = [1]
    for before, after in zip(days, days[1:], strict=False):
        if after.weather == before.weather:
            spells[-1] += 1
        else:
            spells.append(1)
    earliest = min(days, key=lambda d: d.sunrise.time())
    latest = max(days, key=lambda d: d.sunrise.time())
    result = {
        "city": home.name,
        "start": args.start.isoformat(),
        "days": args.days,
        "seed": args.seed,
        "day_kinds": dict(sorted(kinds.items())),
        "days_off": sum(d.is_day_off for d in days),
        "calendar_exact_days": sum(d.calendar_exact for d in days),
        "festivals": {d.date.isoformat(): d.festival for d in days if d.festival},
        "holidays": dict(Counter(d.holiday for d in days if d.holiday and d.is_day_off)),
        "spring_festival_days": [d.date.isoformat() for d in days if d.spring_festival],
        "weather_counts": dict(Counter(d.weather for d in days).most_common()),
        "rain_days_per_month": rain_days,
        "rain_days_per_month_table": table_rain,
        "snow_days": sum(d.weather == "雪" for d in days),
        "mean_spell_days": round(sum(spells) / len(spells), 2),
        "longest_spell_days": max(spells),
        "temp_c": {"min_low": min(d.temp_low_c for d in days), "max_high": max(d.temp_high_c for d in days)},
        "sunrise_range": {"earliest": [earliest.date.isoformat(), _clock(earliest.sunrise)],
                          "latest": [latest.date.isoformat(), _clock(latest.sunrise)]},
        "day_length_h": {"min": round(min(d.sunset - d.sunrise for d in days).total_seconds() / 3600, 2),
                         "max": round(max(d.sunset - d.sunrise for d in days).total_seconds() / 3600, 2)},
        "season_days": dict(Counter(d.season.value for d in days)),
        "solar_season_days": dict(Counter(d.solar_season.value for d in days)),
        "sight_days": dict(Counter(s for d in days for s in d.sights).most_common()),
        "cpu_ms_per_day": round(cpu_s * 1000 / args.days, 3),
    }
    print(json.dumps(result, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
