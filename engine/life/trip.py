"""The 国庆 golden week (issue 24 item 4): she goes home to her parents or takes a trip, lived over the days.

Which one, and where to, is seeded per companion and year, so two companions spend it differently. She leaves on
the holiday's first day and comes back the day before its last (a day at home to rest before work); the days
between are lived there (engine/life/week.py away_anchors: the train, the sights, the train back). Pure.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from engine.errors import ConfigError
from engine.life.calendar import DayKind, day_of
from engine.life.localtime import rng_for
from engine.life.place import city

HOME_SHARE = 0.5   # a year's golden week is a visit home about as often as a trip


@dataclass(frozen=True)
class Trip:
    city: str
    hours: tuple[float, float]
    spots: tuple[str, ...]
    food: tuple[str, ...]


@dataclass(frozen=True)
class Away:
    """Her golden week away from home: `how` is "family" (at her parents') or "trip" (to `trip`)."""

    how: str
    first: dt.date     # the day she leaves
    back: dt.date      # the day she travels back (she is home that night)
    trip: Trip | None

    def day_index(self, date: dt.date) -> int:
        return (date - self.first).days


@cache
def trips() -> tuple[Trip, ...]:
    """The validated destinations (engine/life/data/trips.toml)."""
    raw = tomllib.loads((resources.files("engine.life") / "data" / "trips.toml").read_text(encoding="utf-8"))
    out = []
    for i, row in enumerate(raw.get("trip", [])):
        where = f"trips.toml [[trip]] #{i + 1}"
        hours = row.get("hours")
        if not (isinstance(hours, list) and len(hours) == 2 and 0 < hours[0] <= hours[1]):
            raise ConfigError(f"{where}: hours must be [low, high] train hours, got {hours!r}")
        if not row.get("city") or not row.get("spots") or not row.get("food"):
            raise ConfigError(f"{where}: city, spots and food must not be empty")
        out.append(Trip(str(row["city"]), (float(hours[0]), float(hours[1])), tuple(map(str, row["spots"])),
                        tuple(map(str, row["food"]))))
    if len(out) < 2:
        raise ConfigError("trips.toml: at least two [[trip]] destinations are needed")
    return tuple(out)


@cache
def golden_week(year: int) -> tuple[dt.date, dt.date] | None:
    """The first and last day of the 国庆 holiday run that starts on 1 October (None if 1 October is not off)."""
    first = dt.date(year, 10, 1)
    if day_of(first).kind is not DayKind.HOLIDAY:
        return None
    last = first
    while day_of(last + dt.timedelta(days=1)).kind is DayKind.HOLIDAY:
        last += dt.timedelta(days=1)
    return first, last


@cache
def away_in(seed_key: str, year: int, home_city: str) -> Away | None:
    """Her golden week of `year`: home or a trip (seeded per companion and year); None without a seed or a week."""
    week = golden_week(year)
    if not seed_key or week is None or (week[1] - week[0]).days < 2:
        return None
    rng = rng_for(seed_key, "golden_week", year)
    back = week[1] - dt.timedelta(days=1)
    if rng.random() < HOME_SHARE:
        return Away("family", week[0], back, None)
    options = [t for t in trips() if t.city != home_city]
    return Away("trip", week[0], back, rng.choice(options))


def away_on(seed_key: str, date: dt.date, home_city: str) -> Away | None:
    """Her golden week when `date` is one of its days away (first..back), else None."""
    if date.month != 10 or date.day > 15 or city(home_city).abroad:   # abroad there is no golden week (i24b)
        return None
    away = away_in(seed_key, date.year, home_city)
    return away if away is not None and away.first <= date <= away.back else None


def eatery(trip: Trip) -> str:
    return f"{trip.city}的小馆子"


def stay(trip: Trip) -> str:
    return f"{trip.city}的民宿"


def train_there(trip: Trip) -> str:
    return f"去{trip.city}的高铁上"


def train_back(trip: Trip) -> str:
    return f"从{trip.city}回来的高铁上"


@cache
def _places() -> dict[str, tuple[Trip, str]]:
    out: dict[str, tuple[Trip, str]] = {}
    for trip in trips():
        out[eatery(trip)] = (trip, "meal")
        out[stay(trip)] = (trip, "stay")
        out[train_there(trip)] = (trip, "go")
        out[train_back(trip)] = (trip, "back")
        for spot in trip.spots:
            out.setdefault(spot, (trip, "spot"))
    return out


def place_on_trip(place: str | None) -> tuple[Trip, str] | None:
    """The trip a place belongs to and what it is there (meal, stay, go, back, spot); None for a place at home."""
    return _places().get(place) if place else None
