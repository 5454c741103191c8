"""Calendar facts for time expressions: local spans of days, weeks and months, parts of a day, festival dates.

Pure and clock-free like engine/memory/timeq.py, which reads questions with it. Spans are naive local
wall-clock datetimes; the zone is applied once, by the caller, when a span becomes unix seconds.
Festivals come from engine/memory/data/festivals.toml (calendar facts, not a word list), lunar dates and
solar terms from lunar-python (imported on first use: only questions naming a festival need it).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from datetime import time as dtime
from functools import lru_cache
from importlib import resources

from engine.errors import ConfigError


@dataclass(frozen=True)
class Span:
    """[start, end) as local wall-clock datetimes (naive: the zone is applied once at the end)."""

    start: datetime
    end: datetime


def day_span(first: date, count: int = 1) -> Span:
    start = datetime.combine(first, dtime())
    return Span(start, start + timedelta(days=count))


# Parts of a day in hours from midnight. 晚上 ends at midnight, as in jionlp and in common usage; the
# night words (夜里, 半夜, night) run on to 04:00 next morning, when that night is still being lived.
TIME_OF_DAY = {
    "凌晨": (0, 6), "早上": (5, 10), "早晨": (5, 10), "清晨": (5, 9), "上午": (8, 12), "中午": (11, 14),
    "下午": (12, 18), "傍晚": (17, 19), "晚上": (18, 24), "晚": (18, 24), "夜里": (19, 28), "夜晚": (18, 28),
    "半夜": (22, 28), "深夜": (22, 28), "夜": (19, 28),
    "morning": (5, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 28),
}


def narrow(span: Span, tod: str | None) -> Span:
    """A part of the first day of `span` ("大年三十晚上"), or the span itself when no part is named."""
    if not tod:
        return span
    start_h, end_h = TIME_OF_DAY[tod]
    day0 = span.start.replace(hour=0, minute=0, second=0, microsecond=0)
    return Span(day0 + timedelta(hours=start_h), day0 + timedelta(hours=end_h))


def month_span(year: int, month: int) -> Span:
    first = date(year, month, 1)
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return day_span(first, (nxt - first).days)


def shift_month(year: int, month: int, by: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + by
    return index // 12, index % 12 + 1


def week_start(today: date, weeks_back: int) -> date:
    """Monday of the week `weeks_back` before this one (Chinese and ISO weeks start on Monday)."""
    return today - timedelta(days=today.weekday() + 7 * weeks_back)


@dataclass(frozen=True)
class Festival:
    rule: str
    days: int


@lru_cache(maxsize=1)
def festivals() -> dict[str, Festival]:
    """names -> festival, from engine/memory/data/festivals.toml, validated once."""
    text = (resources.files("engine.memory") / "data" / "festivals.toml").read_text(encoding="utf-8")
    table: dict[str, Festival] = {}
    for entry in tomllib.loads(text)["festival"]:
        festival = Festival(str(entry["rule"]), int(entry["days"]))
        kind = festival.rule.split()[0]
        if kind not in {"solar", "lunar", "lunar_new_year_eve", "jieqi", "nth_weekday"} or festival.days < 1:
            raise ConfigError(f"festivals.toml: bad rule {festival.rule!r} or days {festival.days}")
        for name in entry["names"]:
            table[str(name).lower()] = festival
    return table


@lru_cache(maxsize=512)
def festival_first_day(rule: str, year: int) -> date | None:
    """The festival's first day in Gregorian year `year` (lunar ones through lunar-python), or None."""
    from lunar_python import Lunar, Solar  # imported here: only questions naming a festival need it

    kind, *args = rule.split()
    if not 1901 <= year <= 2099:  # lunar-python's tables; the Gregorian ones are fine anywhere but keep one range
        return None
    if kind == "solar":
        month, day = (int(x) for x in args[0].split("-"))
        return date(year, month, day)
    if kind == "nth_weekday":
        month, nth, weekday = (int(x) for x in args)
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (nth - 1))
    if kind == "lunar_new_year_eve":
        solar = Lunar.fromYmd(year, 1, 1).getSolar()
        return date(solar.getYear(), solar.getMonth(), solar.getDay()) - timedelta(days=1)
    if kind == "lunar":
        month, day = (int(x) for x in args[0].split("-"))
        # 腊月 of lunar year Y-1 is the one that falls in January / February of Gregorian Y.
        solar = Lunar.fromYmd(year - 1 if month == 12 else year, month, day).getSolar()
        return date(solar.getYear(), solar.getMonth(), solar.getDay())
    # jieqi: a lunar year's table runs from the previous 冬至, so look in this year's and the next one's.
    for probe_year in (year, year + 1):
        term = Solar.fromYmd(probe_year, 7, 1).getLunar().getJieQiTable()[args[0]]
        if term.getYear() == year:
            return date(term.getYear(), term.getMonth(), term.getDay())
    return None




def lunar_day(lunar_year: int, month: int, day: int) -> date | None:
    """The Gregorian date of a lunar date (lunar-python), or None if that lunar month has no such day."""
    from lunar_python import Lunar

    try:
        solar = Lunar.fromYmd(lunar_year, month, day).getSolar()
    except Exception:  # lunar-python raises a bare Exception for 三十 of a 29-day month
        return None
    return date(solar.getYear(), solar.getMonth(), solar.getDay())
