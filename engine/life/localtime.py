"""Her local clock: instants to local times and days (her day turns at 04:00), and seeded draws (pure).

Everything random in her life is drawn from `random.Random` seeded with sha256 of (companion, purpose, ...),
so a day replays identically and two companions live different days.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

HOUR = 3600.0
MINUTE = 60.0
DAY_STARTS_AT_H = 4.0            # her "day" runs 04:00-04:00: a 01:00 bedtime belongs to the evening before


def rng_for(seed_key: str, *parts: object) -> random.Random:
    """A Random seeded by sha256 of the parts (Python's hash() is salted per process; sha256 is not)."""
    text = "|".join((seed_key, *map(str, parts)))
    return random.Random(int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big"))


@lru_cache(maxsize=16)
def _zone(tz: str) -> ZoneInfo:
    return ZoneInfo(tz)


def local_time(t: float, tz: str) -> datetime:
    return datetime.fromtimestamp(t, UTC).astimezone(_zone(tz))


def local_hour(t: float, tz: str) -> float:
    lt = local_time(t, tz)
    return lt.hour + lt.minute / 60.0 + lt.second / 3600.0


def day_of(t: float, tz: str) -> str:
    """Her day (YYYY-MM-DD): days turn at 04:00 local, so staying up past midnight is still 'yesterday'."""
    return (local_time(t, tz) - timedelta(hours=DAY_STARTS_AT_H)).date().isoformat()


def date_of(day: str) -> dt.date:
    return dt.date.fromisoformat(day)


def next_day(day: str) -> str:
    return (dt.date.fromisoformat(day) + timedelta(days=1)).isoformat()


def at_local(day: str, hour: float, tz: str) -> float:
    """The instant of `hour` (may exceed 24) on local day `day`."""
    base = datetime.fromisoformat(day).replace(tzinfo=_zone(tz))
    return (base + timedelta(hours=hour)).timestamp()
