"""Her Four Pillars (BaZi) chart from the birth instant, charted with lunar-python in Beijing standard time.

Conversion rule (documented because it decides the hour pillar): the birth is given as a local wall
time in an IANA zone. We resolve it to a UTC instant with zoneinfo (which knows China's 1986-1991
summer time, so an 'Asia/Shanghai' birth during DST is one hour ahead of standard time), then express
that instant in Beijing *standard* time, a fixed UTC+8 with no DST, and chart that. So 1990-08-15
08:30 Asia/Shanghai (DST) is charted at 07:30 standard time: still the 辰 hour (07:00-08:59), giving
庚午 甲申 壬子 甲辰. Births in other zones convert to the same UTC+8 standard clock. An ambiguous wall
time (clocks set back) resolves to its first occurrence (fold=0).

The sect only matters for births 23:00-23:59: sect 2 (default) keeps the day pillar of the calendar
day, sect 1 starts the next day at 23:00 (lunar-python's `setSect`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.errors import InputError

BEIJING_STANDARD = timezone(timedelta(hours=8), "UTC+8")
ELEMENTS = ("木", "火", "土", "金", "水")
STEM_ELEMENT = {"甲": "木", "乙": "木", "丙": "火", "丁": "火", "戊": "土", "己": "土",
                "庚": "金", "辛": "金", "壬": "水", "癸": "水"}
BRANCH_ELEMENT = {"寅": "木", "卯": "木", "巳": "火", "午": "火", "辰": "土", "丑": "土", "戌": "土", "未": "土",
                  "申": "金", "酉": "金", "亥": "水", "子": "水"}
PILLARS = ("year", "month", "day", "time")


def _parse_local(birth_local: str, tz: str) -> datetime:
    try:
        naive = datetime.strptime(birth_local, "%Y-%m-%d %H:%M")
    except ValueError:
        raise InputError(f'birth must be "YYYY-MM-DD HH:MM" (a real date and time), got {birth_local!r}') from None
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"tz must be an IANA time zone such as Asia/Shanghai, got {tz!r}") from None
    return naive.replace(tzinfo=zone, fold=0)


def birth_instant_utc(birth_local: str, tz: str) -> float:
    """The birth instant as Unix seconds (UTC), honouring the zone's DST rules at that date."""
    return _parse_local(birth_local, tz).timestamp()


def beijing_standard_time(instant_utc: float) -> datetime:
    """The instant on the fixed UTC+8 clock (no DST): the clock the chart is read on."""
    return datetime.fromtimestamp(instant_utc, UTC).astimezone(BEIJING_STANDARD)


def compute_chart(birth_local: str, tz: str, sect: int = 2) -> dict[str, Any]:
    """The Four Pillars chart: pillars, day master, element counts, ten gods and hidden stems."""
    if sect not in (1, 2):
        raise InputError(f"bazi sect must be 1 or 2, got {sect!r}")
    from lunar_python import Solar

    bj = beijing_standard_time(birth_instant_utc(birth_local, tz))
    ec = Solar.fromYmdHms(bj.year, bj.month, bj.day, bj.hour, bj.minute, 0).getLunar().getEightChar()
    ec.setSect(sect)
    pillars = {"year": ec.getYear(), "month": ec.getMonth(), "day": ec.getDay(), "time": ec.getTime()}
    hidden = {"year": list(ec.getYearHideGan()), "month": list(ec.getMonthHideGan()),
              "day": list(ec.getDayHideGan()), "time": list(ec.getTimeHideGan())}
    ten_gods = {
        "stems": {"year": ec.getYearShiShenGan(), "month": ec.getMonthShiShenGan(),
                  "day": ec.getDayShiShenGan(), "time": ec.getTimeShiShenGan()},
        "branches": {"year": list(ec.getYearShiShenZhi()), "month": list(ec.getMonthShiShenZhi()),
                     "day": list(ec.getDayShiShenZhi()), "time": list(ec.getTimeShiShenZhi())},
    }
    counts = dict.fromkeys(ELEMENTS, 0)
    for pillar in pillars.values():
        counts[STEM_ELEMENT[pillar[0]]] += 1
        counts[BRANCH_ELEMENT[pillar[1]]] += 1
    day_master = ec.getDayGan()
    return {
        "pillars": pillars,
        "day_master": day_master,
        "day_master_element": STEM_ELEMENT[day_master],
        "elements": counts,
        "ten_gods": ten_gods,
        "hidden_stems": hidden,
        "beijing_time": bj.strftime("%Y-%m-%d %H:%M"),
        "sect": sect,
    }
