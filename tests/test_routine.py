"""A less ideal routine (issue 24 item 5, in part): no alarm on a day off, so she lies in; she no longer sleeps
less before days off than before workdays."""

from __future__ import annotations

import datetime as dt
import statistics

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.settings import Settings

S = Settings()


@pytest.mark.parametrize("birth", ["1990-08-15 08:30", "1985-12-01 22:10"])
def test_she_sleeps_at_least_as_long_before_a_weekend_as_before_a_workday(birth) -> None:
    report = simulate(S, days=120, start=parse_start("2025-01-06T04:00", S.life.tz),
                      birth=(birth, "Asia/Shanghai", 2), name="小安", step_s=900.0)
    before_off, before_work = [], []
    for day in report["daily"]:
        after = dt.date.fromisoformat(day["day"]) + dt.timedelta(days=1)
        (before_off if after.weekday() >= 5 else before_work).append(day["sleep_h"])
    assert statistics.fmean(before_off) >= statistics.fmean(before_work)
    assert all(6.0 <= h <= 10.0 for h in before_off)
