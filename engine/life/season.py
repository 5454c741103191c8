"""The season of a date for her city, and whether a season-bound sight (flower, fruit, snow) is out there.

Two seasons, because they disagree and narration needs both: the solar season of the 24 solar terms (立春, 立夏,
立秋, 立冬 open spring, summer, autumn, winter; what a calendar and a Chinese speaker name), and the felt, climatic
season of her city after the Chinese meteorological standard QX/T 152-2012 (a normal daily mean below 10 C is
winter, 22 C or more summer, between them spring while warming and autumn while cooling), so 杭州 is still summer
on 立秋 and 广州 never has a winter.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from importlib import resources

from engine.errors import ConfigError, InputError
from engine.life.calendar import solar_terms_of_year
from engine.life.place import WEATHERS, ZONES, City, normal_on

SUMMER_FROM_C = 22.0  # QX/T 152-2012: summer when the normal daily mean is at least 22 C
WINTER_BELOW_C = 10.0  # and winter when it is below 10 C


class Season(StrEnum):
    SPRING = "spring"
    SUMMER = "summer"
    AUTUMN = "autumn"
    WINTER = "winter"


_ORDER = (Season.SPRING, Season.SUMMER, Season.AUTUMN, Season.WINTER)
_OPENING_TERMS = {"立春": Season.SPRING, "立夏": Season.SUMMER, "立秋": Season.AUTUMN, "立冬": Season.WINTER}


def solar_term_on(date: dt.date) -> str | None:
    """The solar term (节气) that falls on this date, or None."""
    return solar_terms_of_year(date.year).get(date)


def _flip(season: Season, lat: float) -> Season:
    """The southern hemisphere has the opposite season on the same date."""
    return season if lat >= 0 else _ORDER[(_ORDER.index(season) + 2) % 4]


def _season_openings(year: int) -> tuple[tuple[dt.date, Season], ...]:
    """The dates of 立春/立夏/立秋/立冬 in `year` and the year before, oldest first."""
    found = {**solar_terms_of_year(year - 1), **solar_terms_of_year(year)}
    return tuple(sorted((when, _OPENING_TERMS[name]) for when, name in found.items() if name in _OPENING_TERMS))


def solar_season(date: dt.date, lat: float = 30.0) -> Season:
    """The season opened by the last of 立春/立夏/立秋/立冬 on or before `date` (the opening day counts)."""
    opened = [season for when, season in _season_openings(date.year) if when <= date]
    if not opened:  # the tables always reach back past the last 立冬; this guards a broken lunar-python
        raise ConfigError(f"lunar-python gave no opening solar term before {date.isoformat()}")
    return _flip(opened[-1], lat)


def climatic_season(date: dt.date, city: City) -> Season:
    """The season her city feels like on `date` by its climate normals (QX/T 152-2012 thresholds)."""

    def mean(day: dt.date) -> float:
        low, high = normal_on(day, city)
        return (low + high) / 2

    today = mean(date)
    if today >= SUMMER_FROM_C:
        return Season.SUMMER
    if today < WINTER_BELOW_C:
        return Season.WINTER
    warming = mean(date + dt.timedelta(days=15)) >= mean(date - dt.timedelta(days=15))
    return Season.SPRING if warming else Season.AUTUMN


@dataclass(frozen=True)
class Sight:
    """A season-bound thing she can see or eat, and its months in each climate zone where it exists."""

    name: str
    kind: str
    months_by_zone: dict[str, frozenset[int]]


@cache
def sights() -> dict[str, Sight]:
    """The sights of data/sights.toml by name, validated once."""
    text = (resources.files("engine.life") / "data" / "sights.toml").read_text(encoding="utf-8")
    out: dict[str, Sight] = {}
    for name, raw in tomllib.loads(text).get("sight", {}).items():
        where = f"engine/life/data/sights.toml: [sight.{name}]"
        months: dict[str, frozenset[int]] = {}
        for zone, value in raw.items():
            if zone == "kind":
                continue
            if zone not in ZONES:
                raise ConfigError(f"{where} unknown zone {zone!r}; zones are {sorted(ZONES)}")
            if not isinstance(value, list) or not all(isinstance(m, int) and 1 <= m <= 12 for m in value):
                raise ConfigError(f"{where} {zone} must be a list of months 1-12, got {value!r}")
            months[zone] = frozenset(value)
        out[name] = Sight(name=name, kind=str(raw.get("kind", "")), months_by_zone=months)
    return out


SNOW = "雪"


def in_season(sight: str, date: dt.date, city: City) -> bool:
    """Whether `sight` is out in `city` on `date`; 雪 is possible exactly in the months her city has snow days."""
    if sight == SNOW:
        return city.climate(date.month).weather_share[WEATHERS.index(SNOW)] > 0
    known = sights()
    if sight not in known:
        raise InputError(f"unknown sight {sight!r}: known are {SNOW}, {', '.join(known)} (engine/life/data/sights.toml)")
    return date.month in known[sight].months_by_zone.get(city.zone, frozenset())


def sights_in_season(date: dt.date, city: City) -> tuple[str, ...]:
    """Every flower, fruit or tree sight out in `city` on `date`, in data-file order.

    雪 is left out on purpose: that it can snow this month is not that it snows today; the day's weather says that.
    """
    return tuple(name for name in sights() if in_season(name, date, city))
