"""BaZi reference charts (issue 2 acceptance 4) and the Beijing-standard-time conversion rule."""

from __future__ import annotations

import pytest

from engine.bazi import beijing_standard_time, birth_instant_utc, compute_chart
from engine.errors import InputError


def _pillars(chart: dict) -> str:
    return " ".join(chart["pillars"][p] for p in ("year", "month", "day", "time"))


@pytest.mark.parametrize(
    ("birth", "expected"),
    [
        ("1990-08-15 08:30", "庚午 甲申 壬子 甲辰"),
        ("2024-02-04 16:00", "癸卯 乙丑 戊戌 庚申"),   # before 立春 16:27:07
        ("2024-02-04 17:00", "甲辰 丙寅 戊戌 辛酉"),   # after 立春: new year and month pillars
    ],
)
def test_reference_charts(birth: str, expected: str) -> None:
    assert _pillars(compute_chart(birth, "Asia/Shanghai")) == expected


def test_late_zi_hour_day_master_depends_on_sect() -> None:
    assert compute_chart("1995-03-10 23:30", "Asia/Shanghai", sect=2)["day_master"] == "庚"
    assert compute_chart("1995-03-10 23:30", "Asia/Shanghai", sect=1)["day_master"] == "辛"


def test_china_dst_birth_is_charted_in_standard_time() -> None:
    # 1990-08-15 was in China's summer time (UTC+9): 08:30 on the wall clock is 07:30 standard time.
    assert birth_instant_utc("1990-08-15 08:30", "Asia/Shanghai") == birth_instant_utc("1990-08-14 23:30", "UTC")
    chart = compute_chart("1990-08-15 08:30", "Asia/Shanghai")
    assert chart["beijing_time"] == "1990-08-15 07:30"


def test_dst_shift_changes_the_hour_pillar_at_a_boundary() -> None:
    # 09:30 DST is 08:30 standard: still 辰 hour, whereas charting the wall clock would give 巳.
    dst = compute_chart("1990-08-15 09:30", "Asia/Shanghai")
    assert dst["pillars"]["time"][1] == "辰"
    outside_dst = compute_chart("1990-12-15 09:30", "Asia/Shanghai")
    assert outside_dst["pillars"]["time"][1] == "巳"


def test_other_zones_convert_to_beijing_standard_time() -> None:
    # 00:30 in London (BST, UTC+1) on 2024-06-01 is 07:30 in Beijing.
    chart = compute_chart("2024-06-01 00:30", "Europe/London")
    assert chart["beijing_time"] == "2024-06-01 07:30"
    assert chart["pillars"] == compute_chart("2024-06-01 07:30", "Asia/Shanghai")["pillars"]
    assert beijing_standard_time(0.0).strftime("%H:%M") == "08:00"


def test_chart_has_every_agreed_key() -> None:
    chart = compute_chart("1990-08-15 08:30", "Asia/Shanghai")
    for key in ("pillars", "day_master", "day_master_element", "elements", "ten_gods", "hidden_stems", "beijing_time"):
        assert key in chart
    assert chart["day_master"] == "壬" and chart["day_master_element"] == "水"
    assert sum(chart["elements"].values()) == 8
    assert set(chart["elements"]) == {"木", "火", "土", "金", "水"}
    assert chart["hidden_stems"]["year"] == ["丁", "己"]
    assert chart["ten_gods"]["stems"]["day"] == "日主"


@pytest.mark.parametrize(("birth", "tz"), [("1990-13-01 08:00", "Asia/Shanghai"), ("1990-01-01 8", "Asia/Shanghai"),
                                           ("1990-01-01 08:00", "Mars/Base")])
def test_bad_birth_is_an_input_error(birth: str, tz: str) -> None:
    with pytest.raises(InputError):
        compute_chart(birth, tz)
