"""Her calendar abroad: the host country's working week and public holidays, with her Chinese festivals kept.

A companion who lives outside China (engine/life/data/cities.toml `abroad = true`) works Monday to Friday, has
no Chinese statutory holiday and no make-up workday (调休), and no Spring Festival week at her parents' (she calls
home on 除夕 instead: engine/life/week.py festival_anchors); the festivals are still hers to mark. Her city's
`holidays` names the public holidays she has off: "us" is the six that nearly every US employer gives (New Year's
Day, Memorial Day, Independence Day, Labor Day, Thanksgiving, Christmas), on their dates; a holiday that falls
on a weekend is not moved to a weekday (a simplification: the observed Friday or Monday is a workday here).
"""

from __future__ import annotations

import datetime as dt
from functools import cache

from engine.life.calendar import CalendarDay, DayKind

HOLIDAY_SETS = ("", "us")


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    """The n-th `weekday` (Monday 0) of a month; n = -1 is the last one."""
    if n > 0:
        first = dt.date(year, month, 1)
        return first + dt.timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


@cache
def us_holidays(year: int) -> dict[dt.date, str]:
    """The US public holidays of `year` nearly every employer gives, by date, in the words she would use."""
    return {
        dt.date(year, 1, 1): "元旦",
        _nth_weekday(year, 5, 0, -1): "阵亡将士纪念日",
        dt.date(year, 7, 4): "独立日",
        _nth_weekday(year, 9, 0, 1): "劳动节",
        _nth_weekday(year, 11, 3, 4): "感恩节",
        dt.date(year, 12, 25): "圣诞节",
    }


def abroad_day(cal: CalendarDay, holidays: str = "") -> CalendarDay:
    """`cal` (China's calendar for the date) as she lives the date abroad under the `holidays` set."""
    date = cal.date
    weekend = date.weekday() >= 5
    holiday = us_holidays(date.year).get(date) if holidays == "us" else None
    kind = DayKind.WEEKEND if weekend else DayKind.HOLIDAY if holiday else DayKind.WORKDAY
    # A holiday of the country she lives in is a day she marks too (感恩节), unless a festival of hers falls on it.
    festival = cal.festival or (holiday if holiday and holiday not in ("元旦", "劳动节") else None)
    return CalendarDay(date, kind, holiday, festival, False, exact=cal.exact)
