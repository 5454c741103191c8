"""time_window: the past window a question names, resolved against an injected `now` in Asia/Shanghai.

Expected windows are computed here from calendar facts (datetime arithmetic, lunar-python for lunar
festivals and solar terms), never typed in as results.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lunar_python import Lunar, Solar

from engine.errors import ConfigError, InputError
from engine.memory.timeq import TimeWindow, cn_int, time_window

TZ = "Asia/Shanghai"
ZONE = ZoneInfo(TZ)
# A Tuesday evening, late in the year: most festivals of the year are behind it, 除夕 2027 is ahead.
NOW_DT = datetime(2026, 12, 1, 17, 0, tzinfo=ZONE)
NOW = NOW_DT.timestamp()
TODAY = NOW_DT.date()
# Early in the year: 三月 / 五一 / 中秋 of this year are still ahead, so last year's are meant.
JAN_DT = datetime(2026, 1, 20, 10, 0, tzinfo=ZONE)
JAN = JAN_DT.timestamp()


def _at(day: date, hour: int = 0) -> float:
    return (datetime(day.year, day.month, day.day, tzinfo=ZONE) + timedelta(hours=hour)).timestamp()


def _days(first: date, count: int = 1) -> tuple[float, float]:
    return _at(first), _at(first + timedelta(days=count))


def _month(year: int, month: int) -> tuple[float, float]:
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return _at(date(year, month, 1)), _at(nxt)


def _lunar(year: int, month: int, day: int) -> date:
    solar = Lunar.fromYmd(year, month, day).getSolar()
    return date(solar.getYear(), solar.getMonth(), solar.getDay())


def _new_year_eve(year: int) -> date:
    return _lunar(year, 1, 1) - timedelta(days=1)


def _window(query: str, now: float = NOW) -> tuple[float, float] | None:
    found = time_window(query, now, TZ)
    return None if found is None else (found.start, found.end)


MONDAY = TODAY - timedelta(days=TODAY.weekday())  # this week's Monday (weeks start on Monday in China)


def _jieqi(year: int, name: str) -> date:
    for probe in (year, year + 1):
        term = Solar.fromYmd(probe, 7, 1).getLunar().getJieQiTable()[name]
        if term.getYear() == year:
            return date(term.getYear(), term.getMonth(), term.getDay())
    raise AssertionError(name)


EXPECTED = [
    ("三月份我跟大学同学跑哪玩去了", _month(2026, 3)),
    ("3月份我去哪了", _month(2026, 3)),
    ("in March", _month(2026, 3)),
    ("上个月我在忙啥", _month(2026, 11)),
    ("last month", _month(2026, 11)),
    ("上周末我干嘛了", _days(MONDAY - timedelta(days=2), 2)),
    ("last weekend", _days(MONDAY - timedelta(days=2), 2)),
    ("上周我去哪了", _days(MONDAY - timedelta(days=7), 7)),
    ("what did I do last week", _days(MONDAY - timedelta(days=7), 7)),
    ("昨天吃的啥", _days(TODAY - timedelta(days=1))),
    ("yesterday", _days(TODAY - timedelta(days=1))),
    ("前天", _days(TODAY - timedelta(days=2))),
    ("去年夏天我们去了哪", (_at(date(2025, 6, 1)), _at(date(2025, 9, 1)))),
    ("大年三十晚上我在干嘛", (_at(_new_year_eve(2026), 18), _at(_new_year_eve(2026), 24))),
    ("除夕", _days(_new_year_eve(2026))),
    ("春节我咋过的", _days(_new_year_eve(2026), 7)),
    ("元宵节我咋过的", _days(_lunar(2026, 1, 15))),
    ("中秋", _days(_lunar(2026, 8, 15))),
    ("国庆去哪玩了", _days(date(2026, 10, 1), 7)),
    ("元旦", _days(date(2026, 1, 1))),
    ("五一我去哪玩了", _days(date(2026, 5, 1), 5)),
    ("清明回老家了吗", _days(_jieqi(2026, "清明"))),
    ("端午", _days(_lunar(2026, 5, 5))),
    ("七夕", _days(_lunar(2026, 7, 7))),
    ("情人节那天我在干啥", _days(date(2026, 2, 14))),
    ("周三我去了哪", _days(MONDAY - timedelta(days=5))),  # the Wednesday before this Tuesday
    ("上周三晚上", (_at(MONDAY - timedelta(days=5), 18), _at(MONDAY - timedelta(days=5), 24))),
    ("三天前", _days(TODAY - timedelta(days=3))),
    ("两个月前", _month(2026, 10)),
    ("2025年3月5日", _days(date(2025, 3, 5))),
    ("last christmas", _days(date(2025, 12, 25))),
    ("冬至", _days(_jieqi(2025, "冬至"))),  # 2026's is three weeks ahead of NOW
    ("去年年底", _month(2025, 12)),
    ("五月初五", _days(_lunar(2026, 5, 5))),  # a lunar date: the day is written 初五
    ("正月十五晚上", (_at(_lunar(2026, 1, 15), 18), _at(_lunar(2026, 1, 15), 24))),
    ("农历八月十五", _days(_lunar(2026, 8, 15))),
    ("去年的今天", _days(date(2025, 12, 1))),
    ("上个月底", (_at(date(2026, 11, 21)), _at(date(2026, 12, 1)))),
    ("三月中旬", (_at(date(2026, 3, 11)), _at(date(2026, 3, 21)))),
]


@pytest.mark.parametrize(("query", "expected"), EXPECTED, ids=[q for q, _ in EXPECTED])
def test_expression_gives_its_calendar_window(query: str, expected: tuple[float, float]) -> None:
    assert _window(query) == expected


PAST_ORIENTED = [
    ("三月份我去哪玩了", _month(2025, 3)),
    ("五一我去哪玩了", _days(date(2025, 5, 1), 5)),
    ("中秋", _days(_lunar(2025, 8, 15))),
    ("除夕", _days(_new_year_eve(2025))),  # 2026's 除夕 (February) has not come yet
    ("大年三十晚上", (_at(_new_year_eve(2025), 18), _at(_new_year_eve(2025), 24))),
    ("上个月", _month(2025, 12)),
    ("冬天最冷那几天", (_at(date(2025, 12, 1)), _at(date(2026, 3, 1)))),
    ("去年冬天", (_at(date(2024, 12, 1)), _at(date(2025, 3, 1)))),
    ("年底厂里抽奖我中了啥", _month(2025, 12)),
]


@pytest.mark.parametrize(("query", "expected"), PAST_ORIENTED, ids=[q for q, _ in PAST_ORIENTED])
def test_a_question_about_the_past_gets_the_past_occurrence(query: str, expected: tuple[float, float]) -> None:
    assert _window(query, JAN) == expected


def test_every_window_has_begun_by_now() -> None:
    for query, _ in EXPECTED:
        for now in (NOW, JAN):
            found = time_window(query, now, TZ)
            assert found is not None and found.start <= now


@pytest.mark.parametrize(
    "query",
    [
        "我最喜欢啥天气",
        "我平时玩啥运动",
        "我上回体检是啥时候",
        "我哪天搬到合肥的",
        "那天晚上我们聊了啥",  # an anaphor: which day is not in the question
        "今天天气不错",  # present references are the conversation itself: documented None
        "明天干嘛",  # the future holds no memory
        "下周三有什么安排",
        "每周三我都干嘛",  # a habit, not a window
        "春节前我在哪",  # an open interval
        "三月以后",
        "去年三月和今年四月",  # two windows: ambiguous
        "春节" * 200,  # a list of dates is no one window
        "五月十五",  # no lunar mark, no 日/号: either calendar, so neither
    ],
)
def test_no_window_for_plain_future_habitual_or_ambiguous_questions(query: str) -> None:
    assert time_window(query, NOW, TZ) is None


def test_weekday_words_inside_other_words_are_not_weekdays() -> None:
    # 上周一起 is "last week together", not "last Monday"
    assert _window("上周一起吃饭的是谁") == _days(MONDAY - timedelta(days=7), 7)
    assert _window("这一周一直在下雨吗") == _days(MONDAY, 7)


def test_the_matched_words_are_reported() -> None:
    found = time_window("大年三十晚上我在干嘛", NOW, TZ)
    assert isinstance(found, TimeWindow) and found.expression == "大年三十晚上"
    said = time_window("昨天的事你还记得吗", NOW, TZ)
    assert said is not None and said.expression == "昨天"


def test_the_window_follows_the_zone() -> None:
    shanghai = time_window("昨天", NOW, TZ)
    utc = time_window("昨天", NOW, "UTC")
    assert shanghai is not None and utc is not None
    assert utc.start - shanghai.start == 8 * 3600


def test_bad_zone_and_bad_now_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="Asia/Shanghai"):
        time_window("昨天", NOW, "Mars/Olympus")
    with pytest.raises(InputError, match="unix seconds"):
        time_window("昨天", float("nan"), TZ)


def test_chinese_numerals() -> None:
    assert [cn_int(x) for x in ["3", "十", "十二", "二十一", "两", "一百零五", "x"]] == [3, 10, 12, 21, 2, 105, None]


_TIMEISH = st.sampled_from(["月", "号", "日", "周", "星期", "年", "前", "后", "春节", "除夕", "上", "去年", "晚上",
                            "天", "十", "三", "99999999999", "0", "13", "32", "2月30日", "last ", "week", "may"])


@settings(deadline=None, max_examples=200)
@given(st.lists(st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12), _TIMEISH,
                          st.integers().map(str)), max_size=12).map("".join),
       st.floats(min_value=0, max_value=4e9 - 1))
def test_random_text_never_raises_and_any_window_is_sane(text: str, now: float) -> None:
    found = time_window(text, now, TZ)
    if found is not None:
        assert found.start < found.end and found.start <= now


CYCLES = [("三月份", 366), ("中秋", 390), ("除夕", 390), ("五一", 366), ("圣诞节", 366), ("冬至", 366),
          ("夏天", 366), ("周三", 7), ("周末", 7), ("月底", 62)]


@settings(deadline=None, max_examples=25)
@given(st.floats(min_value=datetime(2000, 1, 1, tzinfo=ZONE).timestamp(),
                 max_value=datetime(2090, 1, 1, tzinfo=ZONE).timestamp()))
def test_a_bare_expression_is_its_most_recent_occurrence(now: float) -> None:
    for query, cycle_days in CYCLES:
        found = time_window(query, now, TZ)
        assert found is not None, query
        assert found.start <= now < found.start + cycle_days * 86400, query


def test_a_day_is_23_hours_when_the_clocks_go_forward() -> None:
    new_york = "America/New_York"
    now = datetime(2026, 3, 9, 12, 0, tzinfo=ZoneInfo(new_york)).timestamp()  # DST began on 8 March 2026
    found = time_window("yesterday", now, new_york)
    assert found is not None and found.end - found.start == 23 * 3600
