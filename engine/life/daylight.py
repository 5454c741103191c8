"""Sunrise, sunset and civil twilight for her city on a date (astral, offline), and the phase of the sky at an instant.

Narration reads the phase, so "天亮了" is said only after dawn and 晚霞 only around sunset. Dawn and dusk are civil
twilight (the sun 6 degrees below the horizon), when the sky is light enough to see by without lamps.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from astral import Observer
from astral.sun import dawn, dusk, sunrise, sunset

from engine.errors import InputError
from engine.life.place import City

# 晚霞 and 朝霞 are seen from shortly before the sun touches the horizon until the end of civil twilight.
GLOW_BEFORE_SUN_MIN = 30


class Phase(StrEnum):
    """The sky as she would see it: before dawn, the half-light of dawn, daylight, the half-light of dusk."""

    NIGHT = "night"
    DAWN = "dawn"
    DAY = "day"
    DUSK = "dusk"


@dataclass(frozen=True)
class Daylight:
    """One local date's sun times in the city's time zone, in time order: dawn < sunrise < sunset < dusk."""

    date: dt.date
    dawn: dt.datetime
    sunrise: dt.datetime
    sunset: dt.datetime
    dusk: dt.datetime

    @property
    def day_length(self) -> dt.timedelta:
        return self.sunset - self.sunrise


def daylight_on(date: dt.date, city: City) -> Daylight:
    """Sun times of `date` in `city`, aware datetimes in the city's zone. Pure (astral computes, nothing is fetched)."""
    observer = Observer(latitude=city.lat, longitude=city.lon)
    try:
        return Daylight(date=date, dawn=_local_event(dawn, observer, date, city),
                        sunrise=_local_event(sunrise, observer, date, city),
                        sunset=_local_event(sunset, observer, date, city), dusk=_local_event(dusk, observer, date, city))
    except ValueError as exc:  # polar day or night: astral cannot place a sunrise
        raise InputError(f"{city.name} has no sunrise or sunset on {date.isoformat()} ({exc})") from exc


def _local_event(event: Any, observer: Observer, date: dt.date, city: City) -> dt.datetime:
    """The sun event that falls on `date` in the city's zone.

    astral 3.2 fails (or answers the next day's event) when the event sits on the UTC day boundary (成都's
    sunrise near 08:00 local = 00:00 UTC: asked for 2000-01-24 it gives the 25th's). So compute in UTC over the
    three UTC dates a local date can touch and keep the one on the local date; if none lands there, the nearest
    one moved by whole days (a sun event drifts under two minutes a day, far below what her day can tell)."""
    found: list[dt.datetime] = []
    for offset in (-1, 0, 1):
        try:
            at = event(observer, date=date + dt.timedelta(days=offset), tzinfo=dt.UTC)
        except ValueError:
            continue
        local: dt.datetime = at.astimezone(city.zoneinfo)
        if local.date() == date:
            return local
        found.append(local)
    if not found:
        raise ValueError(f"no {getattr(event, '__name__', 'sun event')} on {date.isoformat()}")
    nearest = min(found, key=lambda t: abs((t.date() - date).days))
    return nearest - dt.timedelta(days=(nearest.date() - date).days)


def _require_aware(instant: dt.datetime) -> None:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise InputError(f"instant {instant.isoformat()} has no time zone; pass an aware datetime")


def phase_in(instant: dt.datetime, light: Daylight) -> Phase:
    """The phase of an aware instant against one day's sun times. Pure."""
    _require_aware(instant)
    if instant < light.dawn or instant >= light.dusk:
        return Phase.NIGHT
    if instant < light.sunrise:
        return Phase.DAWN
    if instant < light.sunset:
        return Phase.DAY
    return Phase.DUSK


def phase_at(instant: dt.datetime, city: City) -> Phase:
    """The phase of the sky in `city` at an aware instant, using the sun times of its local date there."""
    _require_aware(instant)
    local = instant.astimezone(city.zoneinfo)
    return phase_in(local, daylight_on(local.date(), city))


def sky_glow_at(instant: dt.datetime, city: City) -> str | None:
    """朝霞 or 晚霞 when an instant is in the window where the sky colours (sun low, twilight), else None."""
    _require_aware(instant)
    local = instant.astimezone(city.zoneinfo)
    light = daylight_on(local.date(), city)
    window = dt.timedelta(minutes=GLOW_BEFORE_SUN_MIN)
    if light.dawn <= local <= light.sunrise + window:
        return "朝霞"
    if light.sunset - window <= local <= light.dusk:
        return "晚霞"
    return None
