"""One chat turn's bound beside her natural range, for three charts, as JSON.

For each chart: the turn bound (engine/appraisal/bound.py) from her mood parameters; her natural
valence range in a simulation with no chat (the mean over days of max - min, and max - min over the
whole run); and the step one affect -0.8 turn gives from rest, before the bound (gain x lambda) and after.
Reads nothing from the repository's database; the simulation runs in a temporary file.

Usage: python bench/appraisal_bound.py [--days 14]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from daemon.cli import cmd_simulate
from engine import mood as mood_model
from engine.appraisal import TURN_SHARE, affect_push, bounded_delta, turn_bound
from engine.inner import mood_params
from engine.settings import Settings

CHARTS = ["1998-04-12 09:30", "1990-08-15 08:30", "2001-12-03 22:10"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=14)
    args = parser.parse_args()
    settings = Settings()
    tz = settings.life.tz
    start = datetime(2025, 1, 6, 4, 0, tzinfo=ZoneInfo(tz)).timestamp()
    captured: dict[str, Any] = {}
    real_report = cmd_simulate._report

    def keep(companion, persona, rows, events, trace, *rest):  # type: ignore[no-untyped-def]
        captured.update(persona=persona, trace=trace)
        return real_report(companion, persona, rows, events, trace, *rest)

    cmd_simulate._report = keep
    out: dict[str, Any] = {"turn_share": TURN_SHARE, "chat_push_gain": settings.mood.chat_push_gain, "charts": []}
    for birth in CHARTS:
        cmd_simulate.simulate(settings, days=args.days, start=start, birth=(birth, tz, 2), name="bench")
        params = mood_params(settings, captured["persona"])
        by_day: dict[int, list[float]] = defaultdict(list)
        for point in captured["trace"]:
            by_day[int((point["ts"] - start) // 86400)].append(point["v"])
        vs = [v for day in by_day.values() for v in day]
        daily = [max(d) - min(d) for d in by_day.values() if d]
        at_rest = mood_model.at_baseline(0.0)
        gain = settings.mood.chat_push_gain
        base_v = mood_model.values(at_rest, params)[0]
        unbounded = mood_model.values(mood_model.push(at_rest, (-0.8 * gain, 0, 0), params), params)[0] - base_v
        bounded = mood_model.values(mood_model.push(
            at_rest, bounded_delta(affect_push({"valence": -0.8}), params, gain), params), params)[0] - base_v
        (v_up, v_down), (a_up, a_down), (d_up, d_down) = turn_bound(params)
        out["charts"].append({
            "birth": birth, "valence_baseline": round(params.baseline[0], 3), "loss_aversion": params.loss_aversion,
            "bound": {"v": [round(v_up, 3), round(-v_down, 3)], "a": [round(a_up, 3), round(-a_down, 3)],
                      "d": [round(d_up, 3), round(-d_down, 3)]},
            "valence_range_whole": round(max(vs) - min(vs), 3),
            "valence_range_daily_mean": round(sum(daily) / len(daily), 3),
            "turn_at_affect_minus_0_8": {"before": round(unbounded, 3), "after": round(bounded, 3)},
        })
    cmd_simulate._report = real_report
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
