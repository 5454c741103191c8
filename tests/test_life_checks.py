"""The consistency checks of a narrated life (issue 12, acceptance 2): each flags what contradicts her world, not more.

Synthetic sentences against the real world of 杭州 (engine/life/world.py), with one positive and one negative
example per rule, so a check that flags everything or nothing fails here.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from zoneinfo import ZoneInfo

import pytest

from engine.life import checks
from engine.life.checks import Line
from engine.life.numerals import parse_number, quantities
from engine.life.world import WorldDay, world_day

ZONE = ZoneInfo("Asia/Shanghai")
SEED = "checks-test"


@cache
def world(date: dt.date) -> WorldDay:
    return world_day(date, "杭州", SEED)


def at(day: str, hm: str) -> dt.datetime:
    return dt.datetime.fromisoformat(f"{day}T{hm}").replace(tzinfo=ZONE)


def line(text: str, day: str, start: str, end: str, kind: str = "walk", id_: int = 1,
         moment: str = "completed") -> Line:
    started, ended = at(day, start), at(day, end)
    if ended < started:
        ended += dt.timedelta(days=1)
    return Line(id=id_, text=text, at=ended, started=started, ended=ended, kind=kind, moment=moment)


def words(found: list[checks.Finding]) -> list[str]:
    return [f.word for f in found]


def day_with(weather: set[str], month: int = 0) -> str:
    """A date of 2026 (in `month` if given) whose weather in the test world is one of `weather`."""
    date = dt.date(2026, month or 1, 1)
    while date.year == 2026:
        if world(date).weather in weather and (not month or date.month == month):
            return date.isoformat()
        date += dt.timedelta(days=1)
    raise AssertionError(f"no {weather} day in 2026")


# --- season ---------------------------------------------------------------------------------------------------


def test_osmanthus_in_january_is_a_finding_and_in_october_is_not() -> None:
    text = "去公园走了一圈，看到桂花开了，香了一路。"
    assert words(checks.check_season([line(text, "2026-01-12", "10:00", "10:40")], world)) == ["桂花"]
    assert checks.check_season([line(text, "2026-10-08", "10:00", "10:40")], world) == []


def test_cherry_blossom_in_spring_only_and_lotus_in_summer_only() -> None:
    sakura = "沿着河边散步，樱花落了一地。"
    lotus = "去西湖边看荷花。"
    assert checks.check_season([line(sakura, "2026-03-28", "15:00", "15:40")], world) == []
    assert words(checks.check_season([line(sakura, "2026-08-10", "15:00", "15:40")], world)) == ["樱花"]
    assert checks.check_season([line(lotus, "2026-07-10", "09:00", "09:40")], world) == []
    assert words(checks.check_season([line(lotus, "2026-12-10", "09:00", "09:40")], world)) == ["荷花"]


def test_a_sight_named_in_tea_a_title_a_dream_or_a_negation_is_no_claim() -> None:
    for text in ("泡了杯桂花乌龙，慢慢喝完。", "读了《樱花树下》二十页。", "梦见了满树的桂花。", "桂花还没开，只有叶子。",
                 "画了一幅荷花，颜色调了很久。"):
        assert checks.check_season([line(text, "2026-01-12", "10:00", "10:40", kind="daydream")], world) == [], text


def test_heat_needs_a_warm_day_and_cold_a_cool_one() -> None:
    assert words(checks.check_season([line("今天好热，出门就一身汗。", "2026-01-12", "14:00", "14:30")], world)) == ["热"]
    assert checks.check_season([line("今天好热，出门就一身汗。", "2026-07-20", "14:00", "14:30")], world) == []
    assert words(checks.check_season([line("外面好冷，手都冻红了。", "2026-07-20", "14:00", "14:30")], world)) == ["冷"]
    assert checks.check_season([line("外面好冷，手都冻红了。", "2026-01-12", "14:00", "14:30")], world) == []


# --- sky ------------------------------------------------------------------------------------------------------


def test_evening_glow_in_the_morning_is_a_finding_and_at_sunset_is_not() -> None:
    text = "去老街走了一圈，看到晚霞把天空染成了粉色。"
    w = world(dt.date(2026, 1, 17))
    sunset = w.sunset.strftime("%H:%M")
    assert words(checks.check_sky([line(text, "2026-01-17", "08:05", "08:45")], world)) == ["晚霞"]
    late = (w.sunset + dt.timedelta(minutes=10)).strftime("%H:%M")
    assert checks.check_sky([line(text, "2026-01-17", sunset, late)], world) == []


def test_daybreak_before_dawn_is_a_finding_and_after_it_is_not() -> None:
    w = world(dt.date(2026, 1, 12))
    before = (w.dawn - dt.timedelta(minutes=40)).strftime("%H:%M")
    after = (w.sunrise + dt.timedelta(minutes=20)).strftime("%H:%M")
    text = "一觉睡到天亮，醒来时窗外很安静。"
    assert words(checks.check_sky([line(text, "2026-01-11", "23:00", before, kind="sleep")], world)) == ["天亮"]
    assert checks.check_sky([line(text, "2026-01-11", "23:00", after, kind="sleep")], world) == []


def test_dark_in_the_afternoon_is_a_finding_and_not_yet_light_before_dawn_is_not() -> None:
    assert words(checks.check_sky([line("回家的时候天已经黑了。", "2026-06-20", "14:00", "14:30")], world)) == ["天黑"]
    assert checks.check_sky([line("回家的时候天已经黑了。", "2026-12-20", "17:40", "18:30")], world) == []
    assert checks.check_sky([line("醒来天还没亮，又躺了一会儿。", "2026-12-20", "05:00", "05:20")], world) == []
    assert words(checks.check_sky([line("醒来天还没亮，又躺了一会儿。", "2026-06-20", "10:00", "10:20")], world)) \
        == ["天黑"]


# --- weather --------------------------------------------------------------------------------------------------


def test_rain_on_a_clear_day_is_a_finding_and_on_a_rainy_day_is_not() -> None:
    clear, rainy = day_with({"晴"}), day_with({"小雨", "大雨"})
    text = "靠在窗边发呆，看雨滴顺着玻璃往下流。"
    assert words(checks.check_weather([line(text, clear, "10:00", "10:30", kind="daydream")], world)) == ["雨"]
    assert checks.check_weather([line(text, rainy, "10:00", "10:30", kind="daydream")], world) == []


def test_sun_after_rain_the_same_day_needs_a_told_change() -> None:
    rainy = day_with({"小雨", "大雨"})
    first = line("早上听着雨声吃早饭。", rainy, "07:00", "07:30", kind="breakfast", id_=1)
    sunny = line("下午出门，太阳晒得人暖洋洋的。", rainy, "14:00", "14:40", id_=2)
    found = checks.check_weather([first, sunny], world)
    assert "雨->晴" in words(found)
    told = line("中午雨停了，天慢慢放晴。", rainy, "12:00", "12:10", kind="daydream", id_=3)
    assert [f for f in checks.check_weather([first, told, sunny], world) if f.event_id == 2] == []


def test_a_friend_called_xiaoyu_a_song_called_qingtian_ice_cream_and_a_pot_plant_are_no_weather() -> None:
    clear = day_with({"晴"})
    snowless = day_with({"晴", "多云"})
    lines = [line("和小雨打了电话，聊了好久。", clear, "10:00", "10:30", kind="call_friend", id_=1),
             line("单曲循环了《晴天》。", day_with({"小雨"}), "10:00", "10:30", kind="music", id_=2),
             line("买了一支雪糕。", snowless, "15:00", "15:10", kind="groceries", id_=3),
             line("给阳台上的太阳花浇了水。", day_with({"小雨"}), "08:00", "08:15", kind="plants", id_=4)]
    assert checks.check_weather(lines, world, names=["小雨"]) == []
    assert words(checks.check_weather(lines[:1], world)) == ["雨"]   # without her cast, the name reads as rain


# --- numbers --------------------------------------------------------------------------------------------------


def test_chinese_and_arabic_numerals_parse_to_ranges() -> None:
    assert parse_number("三十") == (30, 30)
    assert parse_number("四十五") == (45, 45)
    assert parse_number("一万两千") == (12000, 12000)
    assert parse_number("两千五") == (2500, 2500)
    assert parse_number("一百零五") == (105, 105)
    assert parse_number("十几") == (11, 19)
    assert parse_number("三四十") == (30, 40)
    assert parse_number("3.5") == (3.5, 3.5)
    assert parse_number("三点五") == (3.5, 3.5)
    assert parse_number("几") is None
    units = {q.word: (q.lo, q.unit) for q in quantities("跳了一个半小时，又走了半小时，共八千步，5公里，第三集，读了12页")}
    assert units == {"一个半小时": (90, "minutes"), "半小时": (30, "minutes"), "八千步": (8000, "steps"),
                     "5公里": (5, "km"), "12页": (12, "pages")}


def test_more_than_an_hour_fits_seventy_minutes_and_not_forty() -> None:
    text = "忙了一个多小时，有点累。"
    assert checks.check_numbers([line(text, "2026-01-07", "09:00", "10:10", kind="chores")]) == []
    assert words(checks.check_numbers([line(text, "2026-01-07", "09:00", "09:40", kind="chores")])) == ["一个多小时"]


def test_thirty_minutes_in_an_hour_is_a_finding_and_in_half_an_hour_is_not() -> None:
    text = "坚持跳绳了三十分钟，腿有点酸。"
    assert words(checks.check_numbers([line(text, "2026-01-07", "07:40", "08:40", kind="exercise")])) == ["三十分钟"]
    assert checks.check_numbers([line(text, "2026-01-07", "07:40", "08:12", kind="exercise")]) == []


def test_steps_and_distance_must_be_walkable_in_the_time() -> None:
    assert words(checks.check_numbers([line("散步走了八千步。", "2026-01-07", "07:40", "08:20")])) == ["八千步"]
    assert checks.check_numbers([line("散步走了八千步。", "2026-01-07", "07:40", "09:00")]) == []
    assert words(checks.check_numbers([line("沿河走了十公里。", "2026-01-07", "07:40", "08:20")])) == ["十公里"]
    assert checks.check_numbers([line("沿河跑了六公里。", "2026-01-07", "07:40", "08:20", kind="exercise")]) == []


def test_remaining_time_ordinals_and_which_one_are_not_amounts() -> None:
    for text in ("聊完又接着看书，还剩大概20分钟。", "看到第十二集，停不下来。", "前十分钟在热身。", "还挺想看下一集的。",
                 "照着方子一步一步来，进到上色这一步了。"):
        assert checks.check_numbers([line(text, "2026-01-07", "20:00", "21:30", kind="drama")]) == [], text
    assert checks.check_numbers([line("慢慢走了半个小时，大概二点五公里。", "2026-01-07", "08:00", "08:30")]) == []
    assert words(checks.check_numbers([line("慢慢走了半个小时，大概八点五公里。", "2026-01-07", "08:00", "08:30")])) \
        == ["八点五公里"]


# --- endings --------------------------------------------------------------------------------------------------


def test_a_piece_mastered_twice_is_a_finding_and_two_pieces_are_not() -> None:
    one = line("《晴天》的前奏终于弹顺了。", "2026-01-07", "19:00", "19:40", kind="music", id_=1)
    again = line("《晴天》的前奏终于弹顺了。", "2026-01-12", "19:00", "19:40", kind="music", id_=2)
    other = line("《后来》的前奏终于弹顺了。", "2026-01-12", "19:00", "19:40", kind="music", id_=3)
    assert [(f.event_id, f.word) for f in checks.check_endings([one, again])] == [(2, "弹顺")]
    assert checks.check_endings([one, other]) == []


def test_a_book_finished_twice_or_read_on_after_its_end_is_a_finding_unless_reread() -> None:
    done = line("终于读完了《活着》。", "2026-02-01", "20:00", "21:00", kind="reading", id_=1)
    twice = line("读完了《活着》，合上书发了会儿呆。", "2026-02-05", "20:00", "21:00", kind="reading", id_=2)
    after = line("《活着》读到第三章。", "2026-02-06", "20:00", "21:00", kind="reading", id_=3)
    reread = line("重读《活着》，读到第三章。", "2026-02-06", "20:00", "21:00", kind="reading", id_=4)
    assert {f.event_id for f in checks.check_endings([done, twice, after])} == {2, 3}
    assert checks.check_endings([done, reread]) == []


def test_progress_in_a_book_never_runs_backwards() -> None:
    forward = [line(f"《围城》读到第{n}章。", "2026-02-0" + str(i + 1), "20:00", "21:00", kind="reading", id_=i)
               for i, n in enumerate(("三", "五", "八"))]
    assert checks.check_endings(forward) == []
    back = line("《围城》读到第二章。", "2026-02-09", "20:00", "21:00", kind="reading", id_=9)
    assert [f.event_id for f in checks.check_endings([*forward, back])] == [9]


def test_an_episode_or_a_lesson_finished_is_not_the_storyline_finished() -> None:
    lines = [line(f"把《漫长的季节》第{n}集看完了。", f"2026-02-0{n}", "20:00", "21:00", kind="drama", id_=n)
             for n in (1, 2)]
    lessons = [line(f"上了四十五分钟日语课，做完了第{n}课的练习。", f"2026-02-1{i}", "07:30", "08:15", kind="study",
                    id_=10 + i) for i, n in enumerate(("三", "四"))]
    assert checks.check_endings(lines + lessons) == []


def test_run_all_reports_every_check_and_rows_become_lines() -> None:
    events = [{"id": 7, "ts": at("2026-01-12", "10:40").timestamp(), "text": "看到桂花开了。", "kind": "completed",
               "activity_id": 3}]
    rows = [{"id": 3, "kind": "walk", "started_at": at("2026-01-12", "10:00").timestamp(),
             "ended_at": at("2026-01-12", "10:40").timestamp(), "expected_end": None}]
    lines = checks.lines_from_rows(events, rows, ZONE)
    assert lines[0].minutes == pytest.approx(40.0) and lines[0].kind == "walk"
    found = checks.run_all(lines, world)
    assert list(found) == list(checks.CHECKS)
    assert [(f.check, f.event_id, f.word) for fs in found.values() for f in fs] == [("season", 7, "桂花")]
    assert all("看到" not in f.why for fs in found.values() for f in fs)   # findings carry no sentence text


def test_her_peoples_names_are_read_from_the_data_and_never_read_as_weather() -> None:
    names = checks.people_names()
    assert names and all(isinstance(n, str) and n for n in names)
    clear = day_with({"晴"})
    calls = [line(f"和{name}打了电话，聊了好久。", clear, "10:00", "10:30", kind="call_friend", id_=i)
             for i, name in enumerate(names)]
    assert checks.check_weather(calls, world, names) == []
