"""Her home city: coordinates, time zone, climate zone and monthly climate normals, loaded once from data/cities.toml."""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.errors import ConfigError, InputError

# The order of the weather columns in data/cities.toml; engine/life/weather.py draws from these.
WEATHERS: tuple[str, ...] = ("晴", "多云", "阴", "小雨", "大雨", "雪", "雾")
ZONES: frozenset[str] = frozenset({"cold", "north", "jiangnan", "sichuan", "south", "us_northeast"})


@dataclass(frozen=True)
class MonthClimate:
    """One month's normals: the share of each weather kind (sums to 1) and mean daily min/max temperature."""

    weather_share: tuple[float, ...]
    low_c: float
    high_c: float


@dataclass(frozen=True)
class City:
    """A place she can live: where it is (for the sun), its clock, and its climate (for weather and sights)."""

    name: str
    lat: float
    lon: float
    tz: str
    zone: str
    months: tuple[MonthClimate, ...]  # 12 entries, January first
    abroad: bool = False  # outside China: no 高铁 home, her parents a video call away (issue 24 item 7)
    holidays: str = ""  # abroad: the public holidays she has off (engine/life/abroad.py), "" none
    spots: tuple[str, ...] = ()  # places in the city she goes out to (narration's {spot}); () = the general ones
    # the city's own words for a narration word pool (engine/life/data/narration.toml [words]): 贝果 in 纽约
    words: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __hash__(self) -> int:
        # The dataclass hash (of all fields, the twelve months' climate included), computed once: a City keys
        # the per-date caches of her world, looked up several times a transition, and rehashing its climate
        # at each lookup was a measurable share of a simulated year. Frozen, so the value never goes stale.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.name, self.lat, self.lon, self.tz, self.zone, self.months))
            object.__setattr__(self, "_hash", cached)
        return int(cached)

    @property
    def zoneinfo(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    def climate(self, month: int) -> MonthClimate:
        return self.months[month - 1]


def _parse_city(name: str, raw: dict[str, object]) -> City:
    where = f"engine/life/data/cities.toml: [city.{name}]"
    try:
        lat, lon = float(raw["lat"]), float(raw["lon"])  # type: ignore[arg-type]
        tz, zone, rows = str(raw["tz"]), str(raw["zone"]), raw["months"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where} needs numbers lat, lon and strings tz, zone and a months table ({exc})") from exc
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise ConfigError(f"{where} lat/lon out of range: {lat}, {lon}")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"{where} tz must be an IANA time zone such as Asia/Shanghai, got {tz!r}") from exc
    if zone not in ZONES:
        raise ConfigError(f"{where} zone must be one of {sorted(ZONES)}, got {zone!r}")
    if not isinstance(rows, list) or len(rows) != 12:
        raise ConfigError(f"{where} months must have 12 rows, January first")
    months: list[MonthClimate] = []
    for month, row in enumerate(rows, start=1):
        width = len(WEATHERS) + 2
        if not isinstance(row, list) or len(row) != width or not all(isinstance(x, int | float) for x in row):
            raise ConfigError(f"{where} month {month} must be {width} numbers: {' '.join(WEATHERS)} low high")
        days, (low, high) = [float(x) for x in row[: len(WEATHERS)]], row[len(WEATHERS) :]
        if any(d < 0 for d in days) or sum(days) <= 0 or low > high:
            raise ConfigError(f"{where} month {month}: day counts must be >= 0 with a positive sum, low <= high")
        total = sum(days)
        months.append(MonthClimate(tuple(d / total for d in days), float(low), float(high)))
    abroad, holidays = raw.get("abroad", False), raw.get("holidays", "")
    if not isinstance(abroad, bool):
        raise ConfigError(f"{where} abroad must be true or false, got {abroad!r}")
    if holidays not in ("", "us"):   # engine/life/abroad.py HOLIDAY_SETS
        raise ConfigError(f"{where} holidays must be \"us\" or left out, got {holidays!r}")
    spots = raw.get("spots", [])
    if not isinstance(spots, list) or not all(isinstance(s, str) and s for s in spots):
        raise ConfigError(f"{where} spots must be a list of place names")
    words = raw.get("words", {})
    if not isinstance(words, dict) or not all(
            isinstance(pool, list) and pool and all(isinstance(w, str) and w for w in pool) for pool in words.values()):
        raise ConfigError(f"{where} words must be a table of non-empty lists of words")
    return City(name=name, lat=lat, lon=lon, tz=tz, zone=zone, months=tuple(months), abroad=abroad, holidays=holidays,
                spots=tuple(spots), words=tuple((str(k), tuple(v)) for k, v in sorted(words.items())))


@cache
def cities() -> dict[str, City]:
    """Every known city by name, validated once; a bad data file is a ConfigError naming the field."""
    text = (resources.files("engine.life") / "data" / "cities.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text).get("city", {})
    return {name: _parse_city(name, raw) for name, raw in table.items()}


def city(name: str) -> City:
    """The city called `name`, or an InputError that lists the known ones (nothing else happens)."""
    known = cities()
    if name not in known:
        raise InputError(
            f"unknown city {name!r}: her world knows {', '.join(known)}; "
            "add it with lat, lon, tz, zone and months to engine/life/data/cities.toml"
        )
    return known[name]


def _mid_month(year: int, month: int) -> dt.date:
    return dt.date(year, month, 15)


def normal_on(date: dt.date, city: City) -> tuple[float, float]:
    """The climate-normal (low, high) in degrees C for a date, interpolated linearly between mid-months.

    Interpolating keeps the normals continuous, so the 1st of a month is not a step colder than the 31st before.
    """
    anchor = _mid_month(date.year, date.month)
    if date >= anchor:
        nxt = dt.date(date.year + (date.month == 12), date.month % 12 + 1, 15)
        before, after = anchor, nxt
    else:
        before = dt.date(date.year - (date.month == 1), (date.month - 2) % 12 + 1, 15)
        before, after = before, anchor
    weight = (date - before).days / (after - before).days
    first, second = city.climate(before.month), city.climate(after.month)
    low = first.low_c + (second.low_c - first.low_c) * weight
    high = first.high_c + (second.high_c - first.high_c) * weight
    return low, high
