"""Her life where she lives and as what she works (issue 24 item 7): a New York companion lives in New York, a
teacher goes to school, an illustrator to her studio. Real simulations on a real (in-memory) file, injected clock."""

from __future__ import annotations

import datetime as dt
import tomllib
from functools import cache
from importlib import resources

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.errors import ConfigError
from engine.feelings import activity_raises
from engine.home import Home, choose_home
from engine.life.calendar import DayKind
from engine.life.place import city
from engine.life.week import _parse_role, cause_feelings, role, role_causes
from engine.life.world import world_day
from engine.settings import Settings

S = Settings()
BIRTH = ("1990-08-15 08:30", "Asia/Shanghai", 2)
NEW_YORK = Home("纽约", "America/New_York", "illustrator")
HANGZHOU_ONLY = ("西湖", "杭州", "上海", "外滩", "高铁", "老家")


@cache
def lived(home: Home, start: str, days: int) -> tuple[tuple[str, str], ...]:
    """(local instant, sentence) of every life event of `days` from `start` (in her zone)."""
    report = simulate(S, days=days, start=parse_start(start, home.tz), birth=BIRTH, name="小安", home=home)
    return tuple((e["ts"], e["text"]) for e in report["life_events"])


@cache
def timeline(home: Home, start: str, days: int) -> tuple[tuple[str, str], ...]:
    report = simulate(S, days=days, start=parse_start(start, home.tz), birth=BIRTH, name="小安", home=home)
    return tuple((a["start"], a["kind"]) for a in report["timeline"])


def test_new_york_has_her_sun_zone_and_working_week() -> None:
    ny, hz = city("纽约"), city("杭州")
    midsummer = world_day(dt.date(2025, 6, 21), ny, "s")
    assert str(midsummer.sunrise.tzinfo) == "America/New_York"
    assert (midsummer.sunrise.hour, midsummer.sunset.hour) == (5, 20)   # 05:25 and 20:31 EDT
    # 除夕 2025 (a Tuesday) is a Chinese holiday and a working day in New York; the Sunday before it is a
    # Chinese make-up workday (调休) and a weekend in New York.
    eve_ny, eve_hz = world_day(dt.date(2025, 1, 28), ny, "s"), world_day(dt.date(2025, 1, 28), hz, "s")
    assert (eve_ny.festival, eve_ny.day_kind, eve_ny.spring_festival) == ("除夕", DayKind.WORKDAY, False)
    assert (eve_hz.day_kind, eve_hz.spring_festival) == (DayKind.HOLIDAY, True)
    sunday = dt.date(2025, 1, 26)
    assert world_day(sunday, ny, "s").day_kind is DayKind.WEEKEND
    assert world_day(sunday, hz, "s").day_kind is DayKind.MAKEUP_WORKDAY
    # the US public holidays are hers off there (a Thursday in November, a Friday in July), not in 杭州
    for date, name in ((dt.date(2025, 11, 27), "感恩节"), (dt.date(2025, 7, 4), "独立日"),
                       (dt.date(2025, 5, 26), "阵亡将士纪念日"), (dt.date(2025, 9, 1), "劳动节"),
                       (dt.date(2025, 12, 25), "圣诞节")):
        day = world_day(date, ny, "s")
        assert (day.day_kind, day.holiday) == (DayKind.HOLIDAY, name), date
        assert world_day(date, hz, "s").day_kind is not DayKind.HOLIDAY
    assert world_day(dt.date(2025, 11, 27), ny, "s").festival == "感恩节"
    # her weather is New York's climate: January there is colder than in 杭州
    assert ny.climate(1).low_c < hz.climate(1).low_c
    # and its flowers: no 腊梅 in a January street there, cherry blossom and tulips in April
    assert "腊梅" in world_day(dt.date(2025, 1, 20), hz, "s").sights
    assert "腊梅" not in world_day(dt.date(2025, 1, 20), ny, "s").sights
    assert {"樱花", "郁金香"} <= set(world_day(dt.date(2025, 4, 10), ny, "s").sights)


def test_two_months_in_new_york_name_her_city_and_none_of_hangzhou() -> None:
    said = lived(NEW_YORK, "2025-03-03T04:00", 60)
    text = "".join(t for _, t in said)
    assert not [w for w in HANGZHOU_ONLY if w in text]
    assert any(spot in text for spot in city("纽约").spots)   # she goes out to places of New York
    assert "贝果" in text and "鸡蛋灌饼" not in text and "黄焖鸡米饭" not in text   # and eats there
    # every instant is her local time, in New York's offsets (EST, then EDT from 03-09)
    assert {ts[-5:] for ts, _ in said} == {"-0500", "-0400"}


def test_the_spring_festival_abroad_is_a_video_call_home_not_a_train() -> None:
    said = lived(NEW_YORK, "2025-01-27T04:00", 4)
    eve = [t for ts, t in said if ts.startswith("2025-01-28")]
    assert any("拜年" in t or "大年初一" in t for t in eve), eve   # the call home on 除夕
    assert not any("高铁" in t or "年夜饭" in t and "爸妈" in t for _, t in said)
    worked = {ts[:10] for ts, kind in timeline(NEW_YORK, "2025-01-27T04:00", 4) if kind == "work"}
    assert {"2025-01-28", "2025-01-29"} <= worked   # 除夕 and 初一 are working days there


def test_the_first_week_of_october_in_new_york_is_a_working_week_not_a_golden_week() -> None:
    worked = {ts[:10] for ts, kind in timeline(NEW_YORK, "2025-09-29T04:00", 9) if kind == "work"}
    assert {"2025-10-01", "2025-10-02", "2025-10-03", "2025-10-06", "2025-10-07"} <= worked
    assert not [t for _, t in lived(NEW_YORK, "2025-09-29T04:00", 9) if "高铁" in t or "民宿" in t]


def test_the_mid_autumn_call_from_new_york_reaches_her_parents_the_next_morning() -> None:
    calls = [t for ts, t in lived(NEW_YORK, "2025-10-06T04:00", 2) if ts.startswith("2025-10-06") and "中秋" in t
             and "视频" in t and ("妈妈" in t or "爸爸" in t)]   # the call home (a friend's call may name the day too)
    assert calls and not [t for t in calls if "边吃月饼边赏月" in t or "举给我看" in t]
    assert all("第二天早上" in t or "昨晚" in t for t in calls), calls


def test_a_teacher_never_goes_to_the_studio_and_an_illustrator_does() -> None:
    teacher = "".join(t for _, t in lived(choose_home(S, role_name="中学老师"), "2025-03-03T04:00", 14))
    illustrator = "".join(t for _, t in lived(choose_home(S, role_name="插画师"), "2025-03-03T04:00", 14))
    assert "工作室" not in teacher and "学校" in teacher and "坐公交" in teacher
    assert not any(word in teacher for word in ("甲方", "客户", "交稿", "儿童绘本"))
    # 学校 as her workplace; a walk 绕着学校外面的林荫道 near home is anyone's (narration.toml's walk routes)
    assert "工作室" in illustrator and not any(at in illustrator for at in ("在学校", "去学校", "从学校", "到学校"))


def test_a_student_rides_her_bike_to_school_with_no_carriage_or_seat() -> None:
    said = [t for _, t in lived(choose_home(S, role_name="学生"), "2025-03-03T04:00", 14)]
    rides = [t for t in said if "骑车" in t]
    assert rides and all("学校" in t for t in rides if "去" in t)
    assert not [t for t in rides if any(w in t for w in ("车厢", "座位", "地铁", "上班"))]


def test_a_role_names_the_causes_of_her_working_days() -> None:
    teacher, illustrator = role("teacher"), role("illustrator")
    causes = {c for _, c in (r for at in range(0, 86400 * 60, 3600)
                             for r in activity_raises("s", "work", "done", 1.0, float(at),
                                                      role_causes=role_causes(teacher)))}
    assert causes and causes <= {*teacher.good_cause, *teacher.bad_cause}
    drawn = {c for at in range(0, 86400 * 60, 3600)
             for _, c in activity_raises("s", "work", "done", 1.0, float(at), role_causes=role_causes(illustrator))}
    assert drawn == {"甲方又要改稿", "稿子被夸了"}   # a role that draws keeps the feelings table's own words


def test_a_cause_that_names_its_feeling_raises_that_feeling_in_place_of_the_tables_first() -> None:
    teacher = role("teacher")
    raised: dict[str, set[str]] = {}
    for at in range(0, 86400 * 90, 3600):
        for pairs, cause in activity_raises("s", "work", "done", 1.0, float(at), role_causes=role_causes(teacher),
                                            cause_feelings=cause_feelings(teacher)):
            raised.setdefault(cause, set()).add(pairs[0][0])
    assert raised["学生打架的事"] == {"tired"}   # sorting out a fight in her class wears her out; it is no 委屈
    assert raised["家长在群里抱怨的事"] == {"wronged"}   # a cause naming no feeling keeps the table's


def test_a_cause_feeling_that_is_no_feeling_is_a_load_error_naming_it() -> None:
    raw = tomllib.loads((resources.files("engine.life") / "data" / "roles.toml").read_text(encoding="utf-8"))
    teacher = dict(raw["role"]["teacher"], bad_cause=[{"t": "学生打架的事", "feel": "烦躁"}])
    with pytest.raises(ConfigError, match="学生打架的事.*feel must be one of"):
        _parse_role("teacher", teacher)


@pytest.mark.parametrize("name", ["程序员", "中学老师", "护士"])
def test_each_role_is_data_with_its_workday(name: str) -> None:
    r = role(name)
    assert r.title == name and not r.draws and r.place != "工作室"
    assert r.doing and r.bad_day and r.good_cause and r.bad_cause
    assert r.start_h < r.lunch_h[0] < r.lunch_h[1] < r.end_h


@pytest.mark.slow
def test_a_year_of_a_new_york_teacher_has_no_slip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The consistency checks of engine/life/checks.py against HER world (纽约's sun, seasons and weather)."""
    from collections import Counter
    from zoneinfo import ZoneInfo

    from engine.life import checks
    from engine.usecases.simulate import read_kept_run

    home = Home("纽约", "America/New_York", "teacher")
    kept = tmp_path / "year.db"
    simulate(S, days=365, start=parse_start("2026-01-05T04:00", home.tz), birth=BIRTH, name="小安", step_s=3600.0,
             keep=str(kept), home=home)
    rows, events, seed = read_kept_run(kept)

    @cache
    def world(date: dt.date):  # type: ignore[no-untyped-def]
        return world_day(date, home.city, seed)

    assert len(events) > 365
    found = checks.run_all(checks.lines_from_rows(events, rows, ZoneInfo(home.tz)), world, checks.people_names())
    counts = Counter({name: len(f) for name, f in found.items() if f})
    first = [(f.check, f.event_id, f.word) for fs in found.values() for f in fs[:3]]
    assert not counts, f"findings per check {dict(counts)}, first ids {first}"
    said = [e["text"] for e in events]
    assert not [t for t in said if "工作室" in t]
    # her parents' home is still 老家 (a 中秋 call home); the city's places and trains are not hers
    assert not [t for t in said if any(w in t for w in HANGZHOU_ONLY if w != "老家")]


def test_a_bad_day_at_work_is_not_named_at_the_end_of_every_sentence() -> None:
    """A reader found 「想起学生打架的事，心里还是有点委屈」 closing 7 sentences of one day: a cause of her own day
    is named now and then (the `dwell` chance of narration.toml), like a cause the user told her."""
    home = choose_home(S, city_name="纽约", role_name="中学老师")
    causes = role_causes(role(home.role))
    assert causes is not None  # a teacher does not draw: her causes are her role's
    bad = causes["bad"]
    per_day: dict[str, int] = {}
    for ts, text in lived(home, "2025-11-24T04:00", 14):
        if any(cause in text for cause in bad):
            per_day[ts[:10]] = per_day.get(ts[:10], 0) + 1
    assert per_day, "no bad day at work in two weeks: the check would read nothing"
    assert max(per_day.values()) <= 3, per_day
