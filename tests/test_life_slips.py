"""The logic-slip checks (issue 24, acceptance 1): each flags the slip a reader found and not the sentence that is
fine, and a year of her life simulated hourly, for two charts, has none."""

from __future__ import annotations

import datetime as dt
import tempfile
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.life import checks, slips
from engine.life.checks import Line
from engine.life.narrate import rain_window, weather_at
from engine.life.world import WorldDay, world_day
from engine.settings import Settings
from engine.store import connect
from engine.store import life as store

ZONE = ZoneInfo("Asia/Shanghai")
SEED = "slips-test"
S = Settings()


@cache
def world(date: dt.date) -> WorldDay:
    return world_day(date, "杭州", SEED)


def line(text: str, day: str, start: str, end: str, kind: str, id_: int = 1) -> Line:
    started = dt.datetime.fromisoformat(f"{day}T{start}").replace(tzinfo=ZONE)
    ended = dt.datetime.fromisoformat(f"{day}T{end}").replace(tzinfo=ZONE)
    return Line(id=id_, text=text, at=ended, started=started, ended=ended, kind=kind)


DAY = "2026-03-10"


def test_two_dinners_in_one_evening_are_a_finding_and_one_is_not() -> None:
    dinner = line("晚饭吃了可乐鸡翅。", DAY, "18:30", "19:10", "dinner", 1)
    cooked_after = line("做了一道地三鲜，火候刚刚好。", DAY, "20:00", "20:40", "cook", 2)
    friend_meal = line("约小雨出来吃饭，聊了两个小时。", DAY, "20:00", "22:00", "meet_friend", 3)
    assert [f.event_id for f in slips.check_dinners([dinner, cooked_after])] == [2]
    assert [f.event_id for f in slips.check_dinners([dinner, friend_meal])] == [3]
    for_tomorrow = line("在厨房忙了四十分钟，做了地三鲜留着明天带饭。", DAY, "20:00", "20:40", "cook", 4)
    drink = line("约小雨出来喝了杯东西，聊了两个小时。", DAY, "20:00", "22:00", "meet_friend", 5)
    later = line("琳琳说家搬完了，约我下次去新家吃火锅。", DAY, "21:00", "21:30", "meet_friend", 6)
    lunch = line("和同事下楼吃饭。", DAY, "12:00", "12:40", "lunch", 7)
    assert slips.check_dinners([lunch, dinner, for_tomorrow, drink, later]) == []


def test_steps_for_online_shopping_are_a_finding_and_at_the_mall_are_not() -> None:
    online = line("在网上挑了两个小时，下单了一件毛衣，走了一万三千四百步。", DAY, "14:00", "16:00", "shopping")
    mall = line("去商场逛了两个小时，买了一件毛衣，走了一万零六百步。", DAY, "14:00", "16:00", "shopping")
    assert [f.check for f in slips.check_online_steps([online])] == ["online_steps"]
    assert slips.check_online_steps([mall]) == []


def test_a_cinema_crowd_at_a_home_projector_is_a_finding_and_at_the_cinema_is_not() -> None:
    home = line("去家里的投影看了《龙猫》，散场出来还在想结尾。", DAY, "14:00", "16:00", "movie")
    cinema = line("去电影院看了《龙猫》，散场出来还在想结尾。", DAY, "14:00", "16:00", "movie")
    assert [f.word for f in slips.check_home_cinema([home])] == ["散场"]
    assert slips.check_home_cinema([cinema]) == []


def test_a_film_longer_than_it_runs_is_a_finding_and_its_real_length_is_not() -> None:
    long = line("看了部电影《龙猫》，片子两个半小时。", DAY, "14:00", "16:30", "movie")
    right = line("看了部电影《霸王别姬》，片子快三个小时。", DAY, "14:00", "17:00", "movie")
    outing = line("看了部电影《龙猫》，前后花了两个半小时。", DAY, "14:00", "16:30", "movie")
    assert [f.check for f in slips.check_film_length([long])] == ["film_length"]
    assert slips.check_film_length([right, outing]) == []


def _degrees(value: int) -> str:
    from engine.life.wording import cn_count

    return ("零下" if value < 0 else "") + cn_count(abs(value), "度")


def test_the_days_low_quoted_at_noon_is_a_finding_and_at_dawn_is_not() -> None:
    date = dt.date.fromisoformat(DAY)
    w = world(date)
    low = round(w.temp_low_c)
    assert low != round(w.temp_high_c)
    text = f"外面才{_degrees(low)}，冷飕飕的，出门散步。"
    assert [f.check for f in slips.check_low_at_noon([line(text, DAY, "11:30", "12:30", "walk")], world)] \
        == ["low_at_noon"]
    assert slips.check_low_at_noon([line(text, DAY, "06:00", "06:40", "walk")], world) == []


def test_rain_said_from_morning_to_midnight_is_a_finding_and_a_shower_is_not() -> None:
    hours = ["07:30", "09:00", "12:00", "15:00", "18:00", "20:00", "22:30"]
    wet = [line("窗外的雨一直没停，看了会儿书。", DAY, "06:30", h, "reading", i) for i, h in enumerate(hours)]
    assert [f.check for f in slips.check_all_day_rain(wet)] == ["all_day_rain"]
    shower = wet[2:5] + [line("看了会儿书。", DAY, "06:30", h, "reading", 10 + i) for i, h in enumerate(hours)]
    assert slips.check_all_day_rain(shower) == []
    # a friend called 小雨 is no rain
    named = [line("和小雨打了电话。", DAY, "06:30", h, "call_friend", i) for i, h in enumerate(hours)]
    assert slips.check_all_day_rain(named, ["小雨"]) == []


def test_a_rainy_day_rains_for_some_hours_only() -> None:
    rainy = next(d for d in (dt.date(2026, 1, 1) + dt.timedelta(days=i) for i in range(365))
                 if world(d).weather in ("小雨", "大雨"))
    window = rain_window(rainy, world(rainy).weather)
    assert window is not None and 4 <= window[1] - window[0] <= 10
    inside = dt.datetime.combine(rainy, dt.time(int(window[0]))).replace(tzinfo=ZONE)
    before = dt.datetime.combine(rainy, dt.time(3)).replace(tzinfo=ZONE)
    assert weather_at(world(rainy), inside) == world(rainy).weather
    assert weather_at(world(rainy), before) not in ("小雨", "大雨")
    assert rain_window(rainy, "晴") is None


@pytest.mark.parametrize("birth", ["1990-08-15 08:30", "1985-12-01 22:10"])
def test_a_year_simulated_hourly_has_no_slip(birth) -> None:
    start = parse_start("2025-01-06T04:00", S.life.tz)
    with tempfile.TemporaryDirectory() as tmp:
        kept = Path(tmp) / "year.db"
        simulate(S, days=365, start=start, birth=(birth, "Asia/Shanghai", 2), name="小安", step_s=3600.0,
                 keep=str(kept))
        conn = connect(kept, readonly=True)
        try:
            events = store.life_events(conn, told_only=False)
            rows = store.activities(conn, -1e18, 1e18)
            seed = (store.get_inner_state(conn) or {}).get("seed_key")
        finally:
            conn.close()
    lines = checks.lines_from_rows(events, rows, ZONE)
    assert len(lines) > 5000

    @cache
    def her_world(date: dt.date) -> WorldDay:
        return world_day(date, S.life.city, seed)

    found = slips.run_slips(lines, her_world, checks.people_names())
    assert set(found) == set(slips.SLIPS)
    assert {name: len(f) for name, f in found.items()} == dict.fromkeys(slips.SLIPS, 0)


# --- issue 24 item 5: no working day on a day off, one cold at a time ------------------------------------------


def test_overtime_or_a_desk_nap_on_a_day_off_is_a_finding_and_on_a_workday_is_not() -> None:
    saturday, monday = "2026-03-14", "2026-03-16"
    assert world(dt.date.fromisoformat(saturday)).is_day_off and not world(dt.date.fromisoformat(monday)).is_day_off
    bad = [line("下班时间早过了，还在工作室赶童书封面。", saturday, "13:00", "19:30", "work", 1),
           line("午休趴在工位上眯了二十分钟。", saturday, "12:40", "13:00", "nap", 2)]
    assert [f.event_id for f in slips.check_work_on_day_off(bad, world)] == [1, 2]
    fine = [line("下班时间早过了，还在工作室赶童书封面。", monday, "13:00", "19:30", "work", 1),
            line("午休趴在工位上眯了二十分钟。", monday, "12:40", "13:00", "nap", 2),
            line("不用上班，睡了八个小时。", saturday, "00:00", "08:00", "sleep", 3),
            line("和小林打了电话，小林说升上组长了，天天加班。", saturday, "20:00", "20:30", "call_friend", 4)]
    assert slips.check_work_on_day_off(fine, world) == []


def test_a_cold_caught_twice_in_a_week_is_a_finding_and_a_cold_going_on_is_not() -> None:
    twice = [line("醒来嗓子又干又疼，好像感冒了。", "2026-03-10", "23:00", "07:00", "sleep", 1),
             line("感冒还没好，鼻子堵了一晚上。", "2026-03-11", "00:00", "07:00", "sleep", 2),
             line("一早起来鼻子塞住了，头昏昏的，八成是感冒了。", "2026-03-13", "00:00", "07:00", "sleep", 3)]
    assert [f.event_id for f in slips.check_cold_again(twice)] == [3]
    once = [twice[0], twice[1], line("好像感冒了。", "2026-03-30", "00:00", "07:00", "sleep", 4)]
    assert slips.check_cold_again(once) == []
