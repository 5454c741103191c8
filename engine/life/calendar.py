"""The kind of a local date in mainland China: workday, weekend, statutory holiday or make-up workday, and its festival.

Years that `chinese-calendar` knows (the State Council's published arrangement, 2004-2026 in 1.11.0) are exact,
make-up workdays (调休) included. For a year it does not know yet (it raises NotImplementedError) the holidays are an
APPROXIMATION: fixed-date 元旦 (1 day), 劳动节 (5/1-5/5), 国庆 (10/1-10/7), and the lunar 春节 (除夕..初六), 清明,
端午 and 中秋 (1 day each) from lunar-python, with no make-up workdays, because the real arrangement is only
announced each November.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import chinese_calendar
from lunar_python import Lunar, Solar


class DayKind(StrEnum):
    """What a date is for someone on the mainland working week."""

    WORKDAY = "workday"
    WEEKEND = "weekend"
    HOLIDAY = "holiday"  # a statutory day off that is not an ordinary weekend (or a weekend inside a holiday)
    MAKEUP_WORKDAY = "makeup_workday"  # 调休: a Saturday or Sunday worked to bridge a holiday


@dataclass(frozen=True)
class CalendarDay:
    """One date as her calendar sees it."""

    date: dt.date
    kind: DayKind
    holiday: str | None  # the statutory holiday this day belongs to (春节, 国庆节 ...), also for its make-up workdays
    festival: str | None  # the festival falling on this very date (除夕, 中秋节, 冬至 ...), holiday or not
    spring_festival: bool  # inside the Spring Festival period, 除夕 to 正月初六
    exact: bool  # True when from the official arrangement, False for the approximation of an unknown year

    @property
    def is_day_off(self) -> bool:
        return self.kind in (DayKind.WEEKEND, DayKind.HOLIDAY)


# chinese-calendar's English names -> the names she would say.
_HOLIDAY_NAMES = {
    "New Year's Day": "元旦",
    "Spring Festival": "春节",
    "Tomb-sweeping Day": "清明节",
    "Labour Day": "劳动节",
    "Dragon Boat Festival": "端午节",
    "National Day": "国庆节",
    "Mid-autumn Festival": "中秋节",
    "Anti-Fascist 70th Day": "抗战胜利纪念日",
}

# Festivals a person in China marks on the day itself, by lunar (month, day); 除夕 is the day before 春节.
_LUNAR_FESTIVALS = ((1, 1, "春节"), (1, 15, "元宵节"), (5, 5, "端午节"), (7, 7, "七夕节"), (8, 15, "中秋节"),
                    (9, 9, "重阳节"), (12, 8, "腊八节"))
_SOLAR_FESTIVALS = ((1, 1, "元旦"), (2, 14, "情人节"), (5, 1, "劳动节"), (10, 1, "国庆节"), (12, 25, "圣诞节"))
_TERM_FESTIVALS = {"清明": "清明节", "冬至": "冬至"}
# lunar-python's tables spell the terms that belong to the next year in pinyin.
_PINYIN_TERMS = {"DA_XUE": "大雪", "DONG_ZHI": "冬至", "XIAO_HAN": "小寒", "DA_HAN": "大寒", "LI_CHUN": "立春",
                 "YU_SHUI": "雨水", "JING_ZHE": "惊蛰"}


def _solar_date(solar: Solar) -> dt.date:
    return dt.date(solar.getYear(), solar.getMonth(), solar.getDay())


@cache
def solar_terms_of_year(year: int) -> dict[dt.date, str]:
    """The 24 solar terms (节气) that fall in Gregorian `year`, by date (lunar-python, computed once per year).

    One Solar-to-Lunar conversion costs about a millisecond, so per-year tables keep a simulated year fast.
    """
    out: dict[dt.date, str] = {}
    for table_year in (year - 1, year):
        for name, solar in Solar.fromYmd(table_year, 6, 1).getLunar().getJieQiTable().items():
            when = _solar_date(solar)
            if when.year == year:
                out[when] = _PINYIN_TERMS.get(name, name)
    return out


@cache
def _festivals_of_year(year: int) -> dict[dt.date, str]:
    """Festival dates of Gregorian `year`: lunar ones first, then 清明/冬至, then fixed dates (first one wins)."""
    out: dict[dt.date, str] = {}
    out[spring_festival_day(year + 1) - dt.timedelta(days=1)] = "除夕"
    out.setdefault(spring_festival_day(year) - dt.timedelta(days=1), "除夕")
    for lunar_year in (year - 1, year):
        for month, day, name in _LUNAR_FESTIVALS:
            out.setdefault(_solar_date(Lunar.fromYmd(lunar_year, month, day).getSolar()), name)
    for when, term in solar_terms_of_year(year).items():
        if term in _TERM_FESTIVALS:
            out.setdefault(when, _TERM_FESTIVALS[term])
    for month, day, name in _SOLAR_FESTIVALS:
        out.setdefault(dt.date(year, month, day), name)
    return {when: name for when, name in out.items() if when.year == year}


def festival_on(date: dt.date) -> str | None:
    """The festival on this date, lunar first (中秋 beats 国庆 when they meet), else None."""
    return _festivals_of_year(date.year).get(date)


@cache
def spring_festival_day(year: int) -> dt.date:
    """正月初一 of the lunar year that starts in Gregorian `year`."""
    return _solar_date(Lunar.fromYmd(year, 1, 1).getSolar())


def in_spring_festival(date: dt.date) -> bool:
    """Whether the date lies in 除夕..正月初六, the days the country stops for the new year."""
    first = spring_festival_day(date.year)
    return first - dt.timedelta(days=1) <= date <= first + dt.timedelta(days=5)


@cache
def _approximate_holidays(year: int) -> dict[dt.date, str]:
    """The fallback holiday table of a year chinese-calendar does not know (see the module docstring)."""
    days: dict[dt.date, str] = {dt.date(year, 1, 1): "元旦"}
    for offset in range(5):
        days[dt.date(year, 5, 1) + dt.timedelta(days=offset)] = "劳动节"
    for offset in range(7):
        days[dt.date(year, 10, 1) + dt.timedelta(days=offset)] = "国庆节"
    first = spring_festival_day(year)
    for offset in range(-1, 6):  # 除夕 (offset -1) to 初六 (offset 5)
        days[first + dt.timedelta(days=offset)] = "春节"
    for name, (month, day) in (("端午节", (5, 5)), ("中秋节", (8, 15))):
        days.setdefault(_solar_date(Lunar.fromYmd(year, month, day).getSolar()), name)
    qingming = next(when for when, term in solar_terms_of_year(year).items() if term == "清明")
    days.setdefault(qingming, "清明节")
    return days


def day_of(date: dt.date) -> CalendarDay:
    """The calendar day of a local date: kind, holiday, festival, Spring Festival period. Pure."""
    weekend = date.weekday() >= 5
    festival, spring = festival_on(date), in_spring_festival(date)
    try:
        on_holiday, name = chinese_calendar.get_holiday_detail(date)
    except NotImplementedError:
        holiday = _approximate_holidays(date.year).get(date)
        kind = DayKind.HOLIDAY if holiday else DayKind.WEEKEND if weekend else DayKind.WORKDAY
        return CalendarDay(date, kind, holiday, festival, spring, exact=False)
    holiday = _HOLIDAY_NAMES.get(name, name) if name else None
    if on_holiday:
        kind = DayKind.HOLIDAY if holiday else DayKind.WEEKEND
    else:
        kind = DayKind.MAKEUP_WORKDAY if weekend else DayKind.WORKDAY
    return CalendarDay(date, kind, holiday, festival, spring, exact=True)
