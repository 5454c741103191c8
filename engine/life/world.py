"""The world of one local day in her city, in one frozen value: what activities and sentences will read.

`world_day` only composes the pure parts (calendar, daylight, season, weather); it reads no clock and no database,
so a simulated year and the live daemon see the same world for the same (date, place, seed).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from engine.life.abroad import abroad_day
from engine.life.calendar import DayKind, day_of
from engine.life.daylight import daylight_on
from engine.life.place import City, city
from engine.life.season import Season, climatic_season, sights_in_season, solar_season, solar_term_on
from engine.life.weather import weather_on


@dataclass(frozen=True)
class WorldDay:
    """Her world on one local date: the kind of day, the sun, the season, the weather, what is in bloom."""

    date: dt.date
    city: str
    day_kind: DayKind
    holiday: str | None  # the statutory holiday the day belongs to (also on its make-up workdays)
    festival: str | None  # the festival on this date (除夕, 中秋节 ...)
    spring_festival: bool  # 除夕..正月初六
    calendar_exact: bool  # False when the year's holidays are the documented approximation
    dawn: dt.datetime
    sunrise: dt.datetime
    sunset: dt.datetime
    dusk: dt.datetime
    season: Season  # as her city feels (climatic, QX/T 152-2012)
    solar_season: Season  # as the solar terms name it
    solar_term: str | None  # the 节气 falling on this date, if any
    weather: str  # 晴 多云 阴 小雨 大雨 雪 雾
    temp_low_c: float
    temp_high_c: float
    sights: tuple[str, ...]  # season-bound sights out today (flowers, fruit); snow is in `weather`, not here

    @property
    def is_day_off(self) -> bool:
        return self.day_kind in (DayKind.WEEKEND, DayKind.HOLIDAY)


def world_day(date: dt.date, place: City | str, seed: str | int) -> WorldDay:
    """Build the world of `date` in `place` (a City or its name; unknown -> InputError) for companion `seed`."""
    home = city(place) if isinstance(place, str) else place
    cal = abroad_day(day_of(date), home.holidays) if home.abroad else day_of(date)
    light = daylight_on(date, home)
    weather = weather_on(date, home, seed)
    return WorldDay(
        date=date,
        city=home.name,
        day_kind=cal.kind,
        holiday=cal.holiday,
        festival=cal.festival,
        spring_festival=cal.spring_festival,
        calendar_exact=cal.exact,
        dawn=light.dawn,
        sunrise=light.sunrise,
        sunset=light.sunset,
        dusk=light.dusk,
        season=climatic_season(date, home),
        solar_season=solar_season(date, home.lat),
        solar_term=solar_term_on(date),
        weather=weather.kind,
        temp_low_c=weather.low_c,
        temp_high_c=weather.high_c,
        sights=sights_in_season(date, home),
    )
