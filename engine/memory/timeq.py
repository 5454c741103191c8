"""The past time window a question names ("三月份", "上周末", "大年三十晚上", "last week"), or None.

Pure: the time of the question (`now`) and her zone are parameters, no clock is read. A question asked of
memory is about the past, so every expression resolves to its most recent occurrence that has begun by
`now`: "三月份" asked in February is last year's March, "除夕" asked in December is the one ten months ago.
An expression that names the future ("明天", "下周"), a habit ("每周三"), an open interval ("春节前",
"三月以后"), an anaphor ("那天晚上") or two different windows at once is not a window: None, so recall
degrades to no time filter. Nothing a caller passes as `query` raises.

Present references ("今天", "现在", "today") also give None, on purpose: today's turns are in the
conversation itself, and a filter on today would pull in whatever was said today whatever its topic
(the "今天天气不错" small-talk query must find nothing).

Why a grammar and not jionlp alone: jionlp 1.5.31 (Apache-2.0) resolves 除夕 / 大年三十 / 周三 to the next
occurrence, reads "三月" as a three-month duration, rejects "3月份" and "上个月", gives "那天晚上" as this
evening, parses no English, and costs 0.8 s and ~35 MB RSS to import (see bench/timeq_cost.py). The
expressions people use in chat are a small closed set, written here as rules over the calendar facts of
engine/memory/timeq_calendar.py (festivals from data/festivals.toml, lunar dates and solar terms through
lunar-python).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.errors import ConfigError, InputError
from engine.memory.timeq_calendar import (
    Span,
    day_span,
    festival_first_day,
    festivals,
    lunar_day,
    month_span,
    narrow,
    shift_month,
    week_start,
)


@dataclass(frozen=True)
class TimeWindow:
    """A span of her local time a question refers to."""

    start: float  # unix seconds, inclusive
    end: float  # unix seconds, exclusive
    expression: str  # the words matched (never logged by callers: it is chat text)


# ---- numbers -------------------------------------------------------------------------------------

_CN_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUM = r"(?:\d{1,4}|[零〇一二两三四五六七八九十百]{1,5})"


def cn_int(text: str) -> int | None:
    """Arabic or Chinese numerals below 1000 ("3", "十二", "二十一", "一百零五") to an int, else None."""
    if text.isascii():
        return int(text) if text.isdigit() else None
    total, current = 0, 0
    for ch in text:
        if ch in _CN_DIGIT:
            current = _CN_DIGIT[ch]
        elif ch in "十百":
            unit = 10 if ch == "十" else 100
            total += (current or 1) * unit
            current = 0
        else:
            return None
    return total + current


_EN_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "eleven": 11, "twelve": 12, "a": 1, "an": 1}
_EN_NUM_RE = r"(?:\d{1,3}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|an?)"


def _en_int(text: str) -> int | None:
    return int(text) if text.isdigit() else _EN_NUM.get(text)


# ---- resolution context ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Now:
    moment: datetime  # naive local wall clock of the question
    today: date


def _year_prefix(m: re.Match[str], now: _Now) -> int | None:
    """The year a prefix names: 去年 -> last year; None when there is no prefix."""
    text = m.groupdict().get("yp")
    if not text:
        return None
    relative = {"今年": 0, "去年": 1, "前年": 2, "大前年": 3, "明年": -1, "this": 0, "last": 1}
    if text in relative:
        return now.today.year - relative[text]
    return int(text[:4])


def _latest(first_of: Callable[[int], Span | None], now: _Now, year: int | None) -> Span | None:
    """The occurrence in `year`, or without a year the most recent one that has begun by now."""
    if year is not None:
        return first_of(year)
    for candidate_year in range(now.today.year, now.today.year - 9, -1):
        span = first_of(candidate_year)
        if span is not None and span.start <= now.moment:
            return span
    return None


def _safe(build: Callable[[], Span | None]) -> Span | None:
    try:
        return build()
    except (ValueError, OverflowError, KeyError):  # 2月30日, year 0, a lunar day that does not exist
        return None


# ---- the rules ------------------------------------------------------------------------------------

Resolver = Callable[[re.Match[str], _Now], "Span | None"]
_RULES: list[tuple[re.Pattern[str], Resolver]] = []


def _rule(pattern: str) -> Callable[[Resolver], Resolver]:
    def register(resolve: Resolver) -> Resolver:
        _RULES.append((re.compile(pattern), resolve))
        return resolve

    return register


_TOD = r"(?:的?(?P<tod>凌晨|早上|早晨|清晨|上午|中午|下午|傍晚|晚上|夜里|夜晚|半夜|深夜))?"
_EN_TOD = r"(?: (?:in the |at )?(?P<etod>morning|afternoon|evening|night))?"
_YP = r"(?:(?P<yp>大前年|前年|去年|今年|明年|(?<!\d)\d{4}年)的?)?"
_EN_YP = r"(?:(?P<yp>last|this) )?"
_WEEK = r"(?:周|週|星期|礼拜|禮拜)"
_REL = r"(?P<rel>上上|上|这|這|本|下)"
_REL_SHIFT = {"上上": 2, "上": 1, "这": 0, "這": 0, "本": 0, "下": -1, None: None,
              "last": 1, "this": 0, "next": -1, "on": None}
# After 周一 these characters make a different word: 一直, 一起, 一共, 一定, 一般, 一切, 一些, 一点, 一下 ...
_NOT_AFTER_ONE = r"(?![直起共定般切些点下样次会遍口个块边向旦度])"
_WEEKDAY = r"(?:" + _WEEK + r"(?P<w>[二三四五六日1-7]|一" + _NOT_AFTER_ONE + r")|(?:星期|礼拜|禮拜)(?P<w2>天))"
_WEEKDAY_INDEX = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
                  "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
_EN_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_EN_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
              "october", "november", "december"]
_CN_MONTH = r"(?P<m>(?<![\d零〇一二两三四五六七八九十百几])(?:1[0-2]|0?[1-9]|十一|十二|十|一|二|三|四|五|六|七|八|九))"


@_rule(r"(?P<d>大前天|前天|昨天|昨日|昨儿个|昨儿|昨晚|昨夜)" + _TOD)
def _relative_day(m: re.Match[str], now: _Now) -> Span | None:
    word = m["d"]
    back = 3 if word == "大前天" else 2 if word == "前天" else 1
    tod = m["tod"] or ("晚上" if word in ("昨晚", "昨夜") else None)
    return narrow(day_span(now.today - timedelta(days=back)), tod)


@_rule(r"(?P<n>" + _NUM + r")(?:天|日)(?:之|以)?前" + _TOD)
def _days_ago(m: re.Match[str], now: _Now) -> Span | None:
    n = cn_int(m["n"])
    return None if n is None or n < 1 else narrow(day_span(now.today - timedelta(days=n)), m["tod"])


@_rule(r"\b(?P<d>yesterday|the day before yesterday|last night)\b" + _EN_TOD)
def _en_relative_day(m: re.Match[str], now: _Now) -> Span | None:
    back = 2 if m["d"].startswith("the day") else 1
    tod = m["etod"] or ("night" if m["d"] == "last night" else None)
    return narrow(day_span(now.today - timedelta(days=back)), tod)


@_rule(r"\b(?P<n>" + _EN_NUM_RE + r") (?P<unit>day|week|month|year)s? ago\b")
def _en_ago(m: re.Match[str], now: _Now) -> Span | None:
    n = _en_int(m["n"])
    if n is None or n < 1:
        return None
    return {"day": _days_back, "week": _weeks_back, "month": _months_back, "year": _years_back}[m["unit"]](n, now)


def _days_back(n: int, now: _Now) -> Span:
    return day_span(now.today - timedelta(days=n))


def _weeks_back(n: int, now: _Now) -> Span:
    return day_span(week_start(now.today, n), 7)


def _months_back(n: int, now: _Now) -> Span:
    return month_span(*shift_month(now.today.year, now.today.month, -n))


def _years_back(n: int, now: _Now) -> Span:
    return day_span(date(now.today.year - n, 1, 1), (date(now.today.year - n + 1, 1, 1) - date(now.today.year - n, 1, 1)).days)


@_rule(_REL + r"(?:个|一|個)?" + _WEEK)
def _relative_week(m: re.Match[str], now: _Now) -> Span | None:
    return _weeks_back(_REL_SHIFT[m["rel"]] or 0, now)


@_rule(r"\b(?P<rel>last|this|next) week\b|\bthe week before last\b")
def _en_relative_week(m: re.Match[str], now: _Now) -> Span | None:
    return _weeks_back((_REL_SHIFT[m["rel"]] or 0) if m["rel"] else 2, now)


@_rule(r"(?P<n>" + _NUM + r")(?:个|個)?" + _WEEK + r"(?:之|以)?前")
def _weeks_ago(m: re.Match[str], now: _Now) -> Span | None:
    n = cn_int(m["n"])
    return None if n is None or n < 1 else _weeks_back(n, now)


def _weekend(back: int | None, now: _Now) -> Span:
    if back is None:  # the weekend that is on now, else the last one
        back = 0 if now.today.weekday() >= 5 else 1
    return day_span(week_start(now.today, back) + timedelta(days=5), 2)


@_rule(_REL + r"?(?:个|個)?(?:周末|週末)")
def _weekend_cn(m: re.Match[str], now: _Now) -> Span | None:
    return _weekend(_REL_SHIFT[m["rel"]], now)


@_rule(r"\b(?:(?P<rel>last|this|next) )?weekend\b")
def _weekend_en(m: re.Match[str], now: _Now) -> Span | None:
    return _weekend(_REL_SHIFT[m["rel"]], now)


def _weekday(weekday: int, back: int | None, now: _Now) -> Span:
    if back is None:  # the most recent such day, today included
        return day_span(now.today - timedelta(days=(now.today.weekday() - weekday) % 7))
    return day_span(week_start(now.today, back) + timedelta(days=weekday))


@_rule(_REL + r"?(?:个|個)?" + _WEEKDAY + _TOD)
def _weekday_cn(m: re.Match[str], now: _Now) -> Span | None:
    return narrow(_weekday(_WEEKDAY_INDEX[m["w"] or m["w2"]], _REL_SHIFT[m["rel"]], now), m["tod"])


@_rule(r"\b(?:(?P<rel>last|this|next|on) )?(?P<wd>" + "|".join(_EN_WEEKDAYS) + r")\b" + _EN_TOD)
def _weekday_en(m: re.Match[str], now: _Now) -> Span | None:
    return narrow(_weekday(_EN_WEEKDAYS.index(m["wd"]), _REL_SHIFT[m["rel"]], now), m["etod"])


@_rule(_REL + r"(?:个|一|個)?月(?!份?[\d零〇一二两三四五六七八九十]|[日号號底初中])")
def _relative_month(m: re.Match[str], now: _Now) -> Span | None:
    return _months_back(_REL_SHIFT[m["rel"]] or 0, now)


@_rule(r"\b(?P<rel>last|this|next) month\b")
def _en_relative_month(m: re.Match[str], now: _Now) -> Span | None:
    return _months_back(_REL_SHIFT[m["rel"]] or 0, now)


@_rule(r"(?P<n>" + _NUM + r")(?:个|個)月(?:之|以)?前")
def _months_ago(m: re.Match[str], now: _Now) -> Span | None:
    n = cn_int(m["n"])
    return None if n is None or n < 1 else _months_back(n, now)


def _named_month(month: int, year: int | None, now: _Now) -> Span | None:
    if not 1 <= month <= 12:
        return None
    return _latest(lambda y: month_span(y, month), now, year)


@_rule(_YP + _CN_MONTH + r"月份?(?![\d零〇一二两三四五六七八九十]|[日号號])")
def _month_cn(m: re.Match[str], now: _Now) -> Span | None:
    return _named_month(cn_int(m["m"]) or 0, _year_prefix(m, now), now)


@_rule(r"\b(?:(?P<pre>in|last|this) )?(?:(?P<mon>" + "|".join(x for x in _EN_MONTHS if x != "may") + r")|(?<=in |st )(?P<may>may))\b(?! \d)")
def _month_en(m: re.Match[str], now: _Now) -> Span | None:
    month = _EN_MONTHS.index(m["mon"] or m["may"]) + 1
    year = None
    if m["pre"] == "this":
        year = now.today.year
    elif m["pre"] == "last":  # "last March": the March before the most recent one when that one is this year's
        latest = _named_month(month, None, now)
        year = latest.start.year - 1 if latest and latest.start.year == now.today.year else None
    return _named_month(month, year, now)


# Parts of a month and of a year, in days / months: 月初 is the first ten days, 年底 is December.
_MONTH_PARTS = {"初": (1, 11), "上旬": (1, 11), "中旬": (11, 21), "下旬": (21, 32), "底": (21, 32), "末": (21, 32)}
_YEAR_PARTS = {"年初": (1, 3), "年中": (6, 8), "年底": (12, 13), "年末": (12, 13)}


def _month_part(year: int, month: int, part: str) -> Span:
    first_day, end_day = _MONTH_PARTS[part]
    whole = month_span(year, month)
    start = whole.start + timedelta(days=first_day - 1)
    return Span(start, min(whole.end, whole.start + timedelta(days=end_day - 1)))


@_rule(_YP + _CN_MONTH + r"月(?P<part>初|上旬|中旬|下旬|底|末)")
def _named_month_part(m: re.Match[str], now: _Now) -> Span | None:
    month = cn_int(m["m"]) or 0
    if not 1 <= month <= 12:
        return None
    return _latest(lambda y: _month_part(y, month, m["part"]), now, _year_prefix(m, now))


@_rule(_REL + r"?(?:个|個)?月(?P<part>初|上旬|中旬|下旬|底|末)")
def _relative_month_part(m: re.Match[str], now: _Now) -> Span | None:
    back = _REL_SHIFT[m["rel"]]
    if back is None:  # 月底 alone: this month's if it has begun, else last month's
        this = _month_part(now.today.year, now.today.month, m["part"])
        back = 0 if this.start <= now.moment else 1
    return _month_part(*shift_month(now.today.year, now.today.month, -back), m["part"])


@_rule(_YP + r"(?P<part>年初|年中|年底|年末)")
def _year_part(m: re.Match[str], now: _Now) -> Span | None:
    first_month, end_month = _YEAR_PARTS[m["part"]]

    def first_of(year: int) -> Span:
        end_year, end_m = shift_month(year, end_month, 0) if end_month <= 12 else (year + 1, 1)
        return Span(datetime(year, first_month, 1), datetime(end_year, end_m, 1))

    return _latest(first_of, now, _year_prefix(m, now))


def _named_date(month: int, day: int, year: int | None, now: _Now) -> Span | None:
    return _latest(lambda y: _safe(lambda: day_span(date(y, month, day))), now, year)


@_rule(_YP + _CN_MONTH + r"月(?P<d>" + _NUM + r")(?:日|号|號)" + _TOD)
def _date_cn(m: re.Match[str], now: _Now) -> Span | None:
    month, day = cn_int(m["m"]), cn_int(m["d"])
    if month is None or day is None:
        return None
    span = _named_date(month, day, _year_prefix(m, now), now)
    return narrow(span, m["tod"]) if span else None


@_rule(r"(?P<y>去年|前年)的?(?:今天|这一天|这天)")
def _same_day_years_ago(m: re.Match[str], now: _Now) -> Span | None:
    back = 1 if m["y"] == "去年" else 2
    day = now.today.replace(day=28) if (now.today.month, now.today.day) == (2, 29) else now.today
    return day_span(day.replace(year=day.year - back))


# Lunar dates: the day written 初一 ... 三十, or the month 正 / 冬 / 腊, or 农历 before it, is a lunar date.
_LUNAR_DAY = r"(?P<ld>初[一二三四五六七八九十]|十[一二三四五六七八九]|二十[一二三四五六七八九]?|廿[一二三四五六七八九]?|三十|十五|十)"
_LUNAR_MONTH = {"正": 1, "冬": 11, "腊": 12}


def _lunar_day_number(text: str) -> int | None:
    return cn_int(text.replace("初", "").replace("廿", "二十"))


@_rule(r"(?P<nl>农历|阴历)?(?P<lm>正|冬|腊|(?<![\d零〇一二两三四五六七八九十])(?:十一|十二|十|一|二|三|四|五|六|七|八|九))月" + _LUNAR_DAY + _TOD)
def _lunar_date(m: re.Match[str], now: _Now) -> Span | None:
    if not (m["nl"] or m["lm"] in _LUNAR_MONTH or m["ld"].startswith(("初", "廿"))):
        return None  # "五月十五" without a lunar mark could be either calendar: no window
    month = _LUNAR_MONTH.get(m["lm"]) or cn_int(m["lm"])
    day = _lunar_day_number(m["ld"])
    if not month or not day:
        return None
    best: Span | None = None
    for lunar_year in range(now.today.year, now.today.year - 3, -1):
        found = lunar_day(lunar_year, month, day)
        span = day_span(found) if found else None
        if span and span.start <= now.moment and (best is None or span.start > best.start):
            best = span
    return narrow(best, m["tod"]) if best else None


@_rule(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)")
def _date_iso(m: re.Match[str], now: _Now) -> Span | None:
    return _safe(lambda: day_span(date(int(m["y"]), int(m["m"]), int(m["d"]))))


@_rule(r"\b(?:(?P<mon>" + "|".join(_EN_MONTHS) + r") (?P<d>\d{1,2})(?:st|nd|rd|th)?|(?P<d2>\d{1,2})(?:st|nd|rd|th)? (?:of )?(?P<mon2>" + "|".join(_EN_MONTHS) + r"))\b")
def _date_en(m: re.Match[str], now: _Now) -> Span | None:
    month = _EN_MONTHS.index(m["mon"] or m["mon2"]) + 1
    return _named_date(month, int(m["d"] or m["d2"]), None, now)


@_rule(r"(?P<y>大前年|前年|去年|今年|明年)(?!的?(?:\d|[零〇一二两三四五六七八九十]|春|夏|秋|冬|暑|寒))")
def _relative_year(m: re.Match[str], now: _Now) -> Span | None:
    return _years_back({"今年": 0, "去年": 1, "前年": 2, "大前年": 3, "明年": -1}[m["y"]], now)


@_rule(r"(?<!\d)(?P<y>(?:19|20)\d\d)年(?!的?(?:\d|[零〇一二两三四五六七八九十]|春|夏|秋|冬|暑|寒))")
def _year_cn(m: re.Match[str], now: _Now) -> Span | None:
    return _years_back(now.today.year - int(m["y"]), now)


@_rule(r"(?P<n>" + _NUM + r")年(?:之|以)?前")
def _years_ago(m: re.Match[str], now: _Now) -> Span | None:
    n = cn_int(m["n"])
    return None if n is None or n < 1 or n > 100 else _years_back(n, now)


@_rule(r"\b(?:(?P<rel>last|this|next) year|in (?P<y>(?:19|20)\d\d))\b")
def _en_year(m: re.Match[str], now: _Now) -> Span | None:
    back = _REL_SHIFT[m["rel"]] if m["rel"] else now.today.year - int(m["y"])
    return _years_back(back or 0, now)


# Meteorological seasons (China Meteorological Administration uses the same months for a first cut);
# school holidays loosely, since they differ by school.
_SEASONS = {"春": (3, 3), "夏": (6, 3), "秋": (9, 3), "冬": (12, 3), "暑假": (7, 2), "寒假": (1, 2),
            "spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}


def _season(name: str, year_prefix: str | None, now: _Now) -> Span | None:
    first_month, months = _SEASONS[name]

    def first_of(year: int) -> Span:
        end_year, end_month = shift_month(year, first_month, months)
        return Span(datetime(year, first_month, 1), datetime(end_year, end_month, 1))

    latest = _latest(first_of, now, None)
    if latest is None:
        return None
    if not year_prefix:
        return latest
    if year_prefix in ("今年", "this"):
        # 今年冬天 in January is the winter that began last December; in summer it would be the future,
        # which no memory holds, so the most recent one is the best reading.
        return latest if first_month == 12 or latest.start.year == now.today.year else None
    back = {"去年": 1, "前年": 2, "大前年": 3, "last": 1}.get(year_prefix)
    if back is None:
        return None if year_prefix == "明年" else first_of(int(year_prefix[:4]))
    if first_month == 12:  # 去年冬天: the winter before the most recent one
        return first_of(latest.start.year - back)
    return first_of(now.today.year - back)


@_rule(_YP + r"(?P<s>春|夏|秋|冬)(?:天|季)|" + _YP.replace("yp", "yp2") + r"(?P<s2>暑假|寒假)")
def _season_cn(m: re.Match[str], now: _Now) -> Span | None:
    return _season(m["s"] or m["s2"], m["yp"] or m["yp2"], now)


@_rule(r"\b(?:(?P<yp>last|this) (?P<s>spring|summer|autumn|fall|winter)|in (?:the )?(?P<s2>spring|summer|autumn|winter))\b")
def _season_en(m: re.Match[str], now: _Now) -> Span | None:
    return _season(m["s"] or m["s2"], m["yp"], now)


def _festival_span(name: str, year: int | None, now: _Now) -> Span | None:
    festival = festivals()[name]

    def first_of(y: int) -> Span | None:
        first = _safe(lambda: day_span(festival_first_day(festival.rule, y) or date.max, festival.days))
        return first if first is not None and first.start.year == y else None

    return _latest(first_of, now, year)


@lru_cache(maxsize=1)
def _festival_pattern() -> str:
    names = sorted(festivals(), key=len, reverse=True)
    cn = "|".join(re.escape(n) for n in names if not n.isascii())
    en = "|".join(re.escape(n) for n in names if n.isascii())
    return r"(?:" + _YP + r"(?P<f>" + cn + r")" + _TOD + r"|" + _EN_YP.replace("yp", "eyp") + r"\b(?P<ef>" + en + r")\b" + _EN_TOD + r")"


def _festival_cn(m: re.Match[str], now: _Now) -> Span | None:
    name = m["f"] or m["ef"]
    year = _year_prefix(m, now)
    if m["eyp"]:
        latest = _festival_span(name, None, now)
        if latest is None:
            return None
        year = latest.start.year - (1 if m["eyp"] == "last" and latest.start.year == now.today.year else 0)
    span = _festival_span(name, year, now)
    return narrow(span, m["tod"] or m["etod"]) if span else None


# Words that make a matched expression something other than a past window: a future, a habit, an open
# interval. A match touching one of them poisons the whole question (None).
_FUTURE = re.compile(r"明天|明日|明早|明晚|后天|下周|下个?星期|下个?礼拜|下个?月|明年|\btomorrow\b|\bnext (?:week|month|year)\b")
_BEFORE = re.compile(r"每|\bevery $")
_AFTER = re.compile(r"^(?:之|以)?(?:前|后(?!来)|後(?!來))|^(?:那阵|左右之前)|^ (?:before|after)\b")
_TRIGGER_CHARS = "天日周週星期礼禮拜月年春夏秋冬暑寒晚夜旬"


@lru_cache(maxsize=1)
def _trigger() -> re.Pattern[str]:
    """A character class of every character that can start or anchor an expression, festivals included:
    a question without any of them names no time (the cheap exit, no rule is run)."""
    firsts = {name[0] for name in festivals() if not name.isascii()}
    chars = "".join(sorted(set(_TRIGGER_CHARS) | firsts))
    return re.compile("[" + re.escape(chars) + r"\d]|[a-z]{3,}")


def _resolve(resolve: Resolver, m: re.Match[str], now: _Now) -> Span | None:
    try:
        return resolve(m, now)
    except (ValueError, OverflowError, KeyError):  # a date that does not exist, a year out of range
        return None


_MAX_HITS = 4


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int
    span: Span | None


def _hits(text: str, now: _Now) -> list[_Hit]:
    """Every rule's matches, the longest leftmost kept where they overlap."""
    found: list[tuple[int, int, re.Match[str], Resolver]] = []
    rules = [*_RULES, (re.compile(_festival_pattern()), _festival_cn)]
    for pattern, resolve in rules:
        for m in pattern.finditer(text):
            if m.end() > m.start():
                found.append((m.start(), m.end(), m, resolve))
    found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
    chosen: list[tuple[int, int, re.Match[str], Resolver]] = []
    last_end = -1
    for start, end, m, resolve in found:
        if start >= last_end:
            chosen.append((start, end, m, resolve))
            last_end = end
    if len(chosen) > _MAX_HITS:  # a list of dates is no one window: do not resolve them all
        return [_Hit(0, 0, None)]
    hits: list[_Hit] = []
    for start, end, m, resolve in chosen:
        poisoned = bool(_BEFORE.search(text[max(0, start - 6):start])) or bool(_AFTER.search(text[end:end + 4]))
        hits.append(_Hit(start, end, None if poisoned else _resolve(resolve, m, now)))
    return hits


def time_window(query: str, now: float, tz: str) -> TimeWindow | None:
    """The past window `query` names, relative to `now` (unix seconds) in zone `tz`; None if it names none,
    names the future, or names two different windows. Never raises on the query text."""
    zone = _zone(tz)
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now) or not 0 <= now < 4e9:
        raise InputError(f"time_window: now must be unix seconds between 1970 and 2096, got {now!r}")
    if not isinstance(query, str) or not query:
        return None
    text = unicodedata.normalize("NFKC", query[:500]).lower()
    if not _trigger().search(text):  # the cheap exit: most questions name no time at all
        return None
    if _FUTURE.search(text):
        return None
    local = datetime.fromtimestamp(now, zone).replace(tzinfo=None)
    hits = _hits(text, _Now(local, local.date()))
    if not hits or any(h.span is None for h in hits):
        return None
    spans = [h.span for h in hits if h.span is not None]
    narrowest = min(spans, key=lambda s: s.end - s.start)
    if any(not (s.start <= narrowest.start and narrowest.end <= s.end) for s in spans):
        return None  # two windows, neither inside the other: ambiguous
    start = narrowest.start.replace(tzinfo=zone).timestamp()
    end = narrowest.end.replace(tzinfo=zone).timestamp()
    if start > now:  # a window that has not begun holds no memory
        return None
    expression = " ".join(text[h.start:h.end] for h in hits)
    return TimeWindow(start, end, expression)


@lru_cache(maxsize=16)
def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ConfigError(f"time zone {tz!r} is not an IANA zone such as Asia/Shanghai") from None
