"""Her affect curves from the pure equations alone (engine/mood.py, engine/energy.py), as JSON.

120 quiet days (no chat, no activities) from a Monday in January on a simple fixed schedule: to bed at
23:00 on Sunday-Thursday nights and at 00:30 on Friday and Saturday nights, waking at the wake threshold
(Borbély's H- crossing) or at the 07:00 alarm on workdays, whichever comes first; one nap decision a day
at 14:30 with energy.nap_chance and a seeded draw (a 30 min nap). Mood gets nothing but her day tone
(mood.day_tone + mood.sleep_tone of the night before), set at waking. Reported per chart (the three
charts the other benches use): felt energy by local hour (mean over days), main-sleep length mean / SD,
the share of nap days, the day-mean valence distribution (07:00-23:00 hourly) and the share of days
below zero; and, once, what a chat until 03:00 costs the next day against the same day without it.
Reads no database. Usage: python bench/affect_curves.py [--days 120]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import statistics
from typing import Any

from engine import energy as en
from engine import mood as mm
from engine.bazi import compute_chart
from engine.persona import persona_from_chart

CHARTS = ["1998-04-12 09:30", "1990-08-15 08:30", "2001-12-03 22:10"]
TZ = "Asia/Shanghai"
START = dt.date(2027, 1, 4)                 # a Monday
HOUR = 3600.0
EPOCH = dt.datetime(2027, 1, 4, tzinfo=dt.timezone(dt.timedelta(hours=8))).timestamp()   # local midnight


def _uniform(seed: str, day: dt.date) -> float:
    digest = hashlib.sha256(f"{seed}|nap|{day.isoformat()}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _bedtime_h(day: dt.date) -> float:
    """Local hours after the day's midnight she goes to bed: 23:00, or 00:30 before a weekend day."""
    return 24.5 if day.weekday() in (4, 5) else 23.0


def live(seed: str, mp: mm.MoodParams, ep: en.EnergyParams, days: int,
         late_night: dt.date | None = None) -> dict[str, Any]:
    """Step her through `days` quiet days; return the per-day and per-hour series."""
    energy = en.free_run(en.spin_up(EPOCH - 20 * HOUR, ep, days=5), EPOCH - 20 * HOUR, ep)
    energy = en.step(en.switch(energy, asleep=False), EPOCH - 17 * HOUR, ep, asleep=False)   # 07:00 the day before
    energy = en.step(energy, EPOCH - 1 * HOUR, ep, asleep=False)                             # 23:00, to bed
    energy = en.switch(energy, asleep=True)
    mood = mm.at_baseline(energy.at)
    by_hour: dict[int, list[float]] = {h: [] for h in range(24)}
    sleeps, day_means, naps, next_day_energy = [], [], 0, []
    for d in range(days):
        day = START + dt.timedelta(days=d)
        midnight = EPOCH + d * 24 * HOUR
        natural = en.crossing(energy.s, energy.at, ep, asleep=True)
        alarm = midnight + 7 * HOUR if day.weekday() < 5 else float("inf")
        wake = max(energy.at + 1.0, min(natural, alarm))
        slept_h = (wake - energy.at) / HOUR
        sleeps.append(slept_h)
        energy = en.switch(en.step(energy, wake, ep, asleep=True), asleep=False)
        mood = mm.set_tone(mm.relax(mood, wake, mp), mm.waking_tone(seed, day, slept_h, mp))
        bed = midnight + (_bedtime_h(day) if day != late_night else 27.0) * HOUR
        nap_at, nap_decided = midnight + 14.5 * HOUR, False
        valence: list[float] = []
        levels: list[float] = []
        for h in range(24):
            at = midnight + (h + 0.5) * HOUR
            if at <= wake or at >= bed:
                continue
            if not nap_decided and energy.at <= nap_at < at:
                nap_decided = True
                energy = en.step(energy, nap_at, ep, asleep=False)
                if _uniform(seed, day) < en.nap_chance(energy, ep):
                    naps += 1
                    napped = en.step(en.switch(energy, asleep=True), nap_at + 0.5 * HOUR, ep, asleep=True)
                    energy = en.switch(napped, asleep=False)
            energy = en.step(energy, at, ep, asleep=False)
            mood = mm.relax(mood, at, mp)
            level = en.level(energy, ep)
            by_hour[h].append(level)
            levels.append(level)
            if 7 <= h < 23:
                valence.append(mm.values(mood, mp)[0])
        day_means.append(statistics.fmean(valence) if valence else mm.values(mood, mp)[0])
        next_day_energy.append(statistics.fmean(levels) if levels else 0.0)
        energy = en.switch(en.step(energy, bed, ep, asleep=False), asleep=True)
    return {"by_hour": by_hour, "sleeps": sleeps, "day_means": day_means, "naps": naps,
            "day_energy": next_day_energy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=120)
    args = parser.parse_args()
    out: dict[str, Any] = {"days": args.days, "start": START.isoformat(), "charts": []}
    for birth in CHARTS:
        persona = persona_from_chart(compute_chart(birth, TZ, 2))
        mp = mm.MoodParams(baseline=(persona.baseline_v, persona.baseline_a, persona.baseline_d),
                           loss_aversion=persona.loss_aversion)
        ep = en.EnergyParams(chronotype_shift_h=persona.chronotype_shift_h)
        run = live(f"bench|{birth}", mp, ep, args.days)
        means = run["day_means"]
        q = statistics.quantiles(means, n=10)
        out["charts"].append({
            "birth": birth, "valence_baseline": round(persona.baseline_v, 4),
            "chronotype_shift_h": round(persona.chronotype_shift_h, 3),
            "energy_by_hour": {f"{h:02d}": round(statistics.fmean(v), 3) for h, v in run["by_hour"].items() if v},
            "sleep_h_mean": round(statistics.fmean(run["sleeps"]), 3),
            "sleep_h_sd": round(statistics.pstdev(run["sleeps"]), 3),
            "nap_day_share": round(run["naps"] / args.days, 3),
            "valence_day_mean": {"mean": round(statistics.fmean(means), 4), "sd": round(statistics.pstdev(means), 4),
                                 "p10": round(q[0], 4), "median": round(q[4], 4), "p90": round(q[8], 4),
                                 "min": round(min(means), 4), "max": round(max(means), 4),
                                 "share_below_zero": round(sum(x < 0 for x in means) / len(means), 3)},
            # the sample mean of her day tone over these days (zero over the long run): why the 120-day mean
            # valence sits a little off her baseline
            "day_tone_mean": round(statistics.fmean(
                mm.day_tone(f"bench|{birth}", START + dt.timedelta(days=d), mp) for d in range(args.days)), 4),
        })
    # A chat until 03:00 on a Tuesday night (day 8, a Tuesday): the next day's sleep, mean energy, nap chance.
    persona = persona_from_chart(compute_chart(CHARTS[0], TZ, 2))
    mp = mm.MoodParams(baseline=(persona.baseline_v, persona.baseline_a, persona.baseline_d))
    ep = en.EnergyParams(chronotype_shift_h=persona.chronotype_shift_h)
    control = live("late", mp, ep, 12)
    late = live("late", mp, ep, 12, late_night=START + dt.timedelta(days=8))
    out["late_night"] = {"birth": CHARTS[0], "night": (START + dt.timedelta(days=8)).isoformat(),
                         "next_sleep_h": {"control": round(control["sleeps"][9], 3), "late": round(late["sleeps"][9], 3)},
                         "next_day_mean_energy": {"control": round(control["day_energy"][9], 3),
                                                  "late": round(late["day_energy"][9], 3)},
                         "next_day_valence": {"control": round(control["day_means"][9], 4),
                                              "late": round(late["day_means"][9], 4)}}
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
