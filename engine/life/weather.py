"""Weather as one state per (day, city): a seeded Markov chain over the city's monthly climate table, pure and replayable.

Each day either keeps yesterday's weather (probability PERSISTENCE) or draws afresh from that month's climate
shares. Mixing the month's distribution with "stay" keeps that distribution stationary, so a long run has the
table's proportions while spells last (rain for days in the 梅雨, not rain, fog and sun within hours). Every draw
is a hash of (seed, city, date, purpose), so the weather of any date is computed directly, in any order, without
stored state: walk back to the last fresh day (on average 2 days), then forward. The seed is the companion's id;
two companions in one city live different weather, one companion always the same.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass
from statistics import NormalDist

from engine.life.place import WEATHERS, City, normal_on

PERSISTENCE = 0.5  # chance a day repeats yesterday's kind: mean spell 1/(1-0.5(1-p)) days, 2 for rare kinds
MAX_LOOKBACK_DAYS = 60  # a fresh draw is forced this far back (0.5^60: never in practice, but bounded and pure)
TEMP_ANOMALY_SD_C = 2.5  # day-to-day spread of temperature around the normals (a typical synoptic anomaly)
TEMP_ANOMALY_MEMORY = 0.7  # AR(1)-like carry-over of the anomaly from one day to the next
_ANOMALY_DAYS = 10  # the moving average that realises that carry-over, truncated where 0.7^10 < 3 %

# How each kind shifts the day's (low, high) from the normals: clear days are wider, clouds and rain narrow the range.
_TEMP_SHIFT_C: dict[str, tuple[float, float]] = {
    "晴": (-1.0, 1.5),
    "多云": (0.0, 0.0),
    "阴": (0.5, -1.5),
    "小雨": (0.5, -3.0),
    "大雨": (0.0, -4.0),
    "雪": (-1.0, -3.0),
    "雾": (1.0, -1.0),
}
SNOW_HIGH_MAX_C = 3.0  # snow that settles needs a cold day: a snow day's high is capped here, its low at 0
_MIN_RANGE_C = 2.0  # a day's high stays at least this much above its low


@dataclass(frozen=True)
class Weather:
    """The weather of one day in one city: its kind and the day's low and high in degrees C (rounded to 0.1)."""

    date: dt.date
    city: str
    kind: str
    low_c: float
    high_c: float

    @property
    def wet(self) -> bool:
        return self.kind in ("小雨", "大雨", "雪")


def _uniform(seed: str | int, city: City, date: dt.date, purpose: str) -> float:
    """A reproducible number in [0, 1) for one purpose on one day; a hash, so no order of calls matters."""
    key = f"{seed}|{city.name}|{date.isoformat()}|{purpose}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") / 2**64


def _fresh_kind(seed: str | int, city: City, date: dt.date) -> str:
    shares = city.climate(date.month).weather_share
    u, acc = _uniform(seed, city, date, "kind"), 0.0
    for kind, share in zip(WEATHERS, shares, strict=True):
        acc += share
        if u < acc:
            return kind
    return next(kind for kind, share in zip(reversed(WEATHERS), reversed(shares), strict=True) if share > 0)


def kind_on(date: dt.date, city: City, seed: str | int) -> str:
    """The weather kind of `date`: the last fresh draw, carried forward while the month still allows it."""
    fresh_day = date
    for _ in range(MAX_LOOKBACK_DAYS):
        if _uniform(seed, city, fresh_day, "persist") >= PERSISTENCE:
            break
        fresh_day -= dt.timedelta(days=1)
    kind = _fresh_kind(seed, city, fresh_day)
    day = fresh_day + dt.timedelta(days=1)
    while day <= date:
        # A kind this month never has (snow carried into a March without snow) ends the spell with a fresh draw.
        if city.climate(day.month).weather_share[WEATHERS.index(kind)] == 0:
            kind = _fresh_kind(seed, city, day)
        day += dt.timedelta(days=1)
    return kind


def _anomaly_c(date: dt.date, city: City, seed: str | int) -> float:
    """A smooth temperature anomaly: an exponentially weighted sum of daily normal draws, scaled to SD 2.5 C."""
    rho = TEMP_ANOMALY_MEMORY
    norm = math.sqrt((1 - rho**2) / (1 - rho ** (2 * _ANOMALY_DAYS)))
    total = 0.0
    for back in range(_ANOMALY_DAYS):
        day = date - dt.timedelta(days=back)
        u = min(max(_uniform(seed, city, day, "temp"), 1e-12), 1 - 1e-12)
        total += rho**back * NormalDist().inv_cdf(u)
    return TEMP_ANOMALY_SD_C * norm * total


def weather_on(date: dt.date, city: City, seed: str | int) -> Weather:
    """The one weather of `date` in `city` for companion `seed`. Pure: same arguments, same weather, always."""
    kind = kind_on(date, city, seed)
    normal_low, normal_high = normal_on(date, city)
    anomaly = _anomaly_c(date, city, seed)
    shift_low, shift_high = _TEMP_SHIFT_C[kind]
    low, high = normal_low + anomaly + shift_low, normal_high + anomaly + shift_high
    if kind == "雪":
        high, low = min(high, SNOW_HIGH_MAX_C), min(low, 0.0)
    low = min(low, high - _MIN_RANGE_C)
    return Weather(date=date, city=city.name, kind=kind, low_c=round(low, 1), high_c=round(high, 1))
