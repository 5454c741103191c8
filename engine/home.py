"""Where she lives and what she does (her city, zone and role), read from her file with [life] as the default.

Each companion has her own home (issue 24 item 7): `anima init --city 成都 --role 插画师` stores it in her
companion row (engine/store/migrations/0016), and a file from before, without it, lives by [life] city, tz and
role exactly as before. Everything downstream (her day, sun, seasons, weather, dates in the memory block, the
calendar's cron zone) reads `settings.life`, so the daemon and the CLI hand each companion `her_settings`:
the host's settings with her home put in. One object per (settings, home), so companions of one city share it
and engine/life's per-settings caches stay one entry per place, not one per companion.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.errors import ConfigError, InputError
from engine.life.place import cities, city
from engine.life.week import role, role_id, roles
from engine.recent import RecentMap
from engine.settings import Settings


@dataclass(frozen=True)
class Home:
    """Her city (a name in engine/life/data/cities.toml), the zone her day runs in, and her role id."""

    city: str
    tz: str
    role: str

    def to_dict(self) -> dict[str, str]:
        """What status and /v1/state show: her city, zone and role (id and title)."""
        return {"city": self.city, "tz": self.tz, "role": self.role, "role_title": role(self.role).title}


def default_home(settings: Settings) -> Home:
    """The home of a companion whose file has none: [life] city, tz and role (validated when loaded)."""
    return Home(city=settings.life.city, tz=settings.life.tz, role=role_id(settings.life.role) or settings.life.role)


def home_of(companion: dict[str, Any] | None, settings: Settings) -> Home:
    """Her home as her file records it, or the [life] defaults for a file from before migration 0016."""
    if companion is None or not companion.get("home_city"):
        return default_home(settings)
    base = default_home(settings)
    return Home(city=str(companion["home_city"]), tz=str(companion.get("home_tz") or base.tz),
                role=str(companion.get("work_role") or base.role))


def choose_home(settings: Settings, *, city_name: str | None = None, tz: str | None = None,
                role_name: str | None = None) -> Home:
    """The home of a new companion from `anima init` flags, or an InputError (nothing is written).

    `city_name` is a city of her world; without it, a `tz` other than [life]'s picks the first city of her
    world in that zone (`--tz America/New_York` lives in 纽约), and no flag at all is the [life] default.
    Her zone is always her city's. With a city, `tz` is only her birth zone (born in 杭州, living in 纽约:
    `--tz Asia/Shanghai --city 纽约`), so a city and a birth zone that differ are not a contradiction.
    """
    base = default_home(settings)
    if tz is not None:
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise InputError(f"tz must be an IANA time zone such as Asia/Shanghai, got {tz!r}") from None
    if city_name is None:
        if tz is None or tz == base.tz:
            home_city = base.city
        else:
            in_zone = [name for name, c in cities().items() if c.tz == tz]
            if not in_zone:
                raise InputError(f"no city of her world is in zone {tz!r}: pass --city (one of "
                                 f"{', '.join(cities())}), or add one to engine/life/data/cities.toml")
            home_city = in_zone[0]
    else:
        home_city = city_name
    place = city(home_city)  # InputError naming the known cities
    zone = base.tz if city_name is None and home_city == base.city else place.tz
    try:
        rid = role(role_name).name if role_name is not None else base.role
    except ConfigError:
        known = ", ".join(f"{r.title} ({rid})" for rid, r in roles().items())
        raise InputError(f"unknown role {role_name!r}: known roles are {known}") from None
    return Home(city=home_city, tz=zone, role=rid)


# Her settings by (the host's settings, her home): every beat of every companion asks, and engine/life keys its
# caches on the settings object, so one object per place keeps them small and hot.
SETTINGS_KEPT = 1024
_theirs: RecentMap[tuple[int, Home], tuple[Settings, Settings]] = RecentMap(SETTINGS_KEPT)


def settings_for(settings: Settings, home: Home) -> Settings:
    """`settings` with [life] city, tz and role set to her home (the same object when they already are)."""
    life = settings.life
    if (life.city, life.tz, role_id(life.role) or life.role) == (home.city, home.tz, home.role):
        return settings
    key = (id(settings), home)
    hit = _theirs.get(key)
    if hit is not None and hit[0] is settings:
        return hit[1]
    hers = dataclasses.replace(settings, life=dataclasses.replace(life, city=home.city, tz=home.tz, role=home.role))
    _theirs.put(key, (settings, hers))
    return hers


def her_settings(settings: Settings, companion: dict[str, Any] | None) -> Settings:
    """The settings she lives by: the host's, with her home from her file (or the defaults) put in."""
    return settings_for(settings, home_of(companion, settings))


def settings_in_file(conn: Any, settings: Settings) -> Settings:
    """her_settings for the companion of an open file (the defaults before `anima init`); reads only."""
    from engine.store.core import get_companion

    return her_settings(settings, get_companion(conn))
