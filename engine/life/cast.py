"""Her cast: the friends and family she meets or calls (engine/data/cast.toml), and who is due to be seen.

A member is due when it has been longer than their `meet_every_days` since she last saw (same city) or called
(hometown) them; the longer overdue, the more she wants to. Pure over the `met` map her day state keeps.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from engine.errors import ConfigError
from engine.life.localtime import rng_for
from engine.life.scene import Companion

RELATIONS = ("friend", "mother", "father", "colleague", "cousin")
LIVES = ("same_city", "hometown")
FAMILY = ("mother", "father")
DAY = 86400.0
_ID = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


@dataclass(frozen=True)
class Member:
    id: str
    name: str
    relation: str
    lives: str
    meet_every_days: float

    @property
    def companion(self) -> Companion:
        return Companion(id=self.id, name=self.name, relation=self.relation)


@cache
def cast() -> dict[str, Member]:
    """The validated cast (engine/data/cast.toml)."""
    data = tomllib.loads((resources.files("engine") / "data" / "cast.toml").read_text(encoding="utf-8"))
    members: dict[str, Member] = {}
    for member_id, row in data.get("member", {}).items():
        where = f"cast.toml [member.{member_id}]"
        if not _ID.match(member_id):
            raise ConfigError(f"{where}: the id must be lower-case ascii letters, digits or _")
        if row.get("relation") not in RELATIONS:
            raise ConfigError(f"{where}: relation must be one of {', '.join(RELATIONS)}, got {row.get('relation')!r}")
        if row.get("lives") not in LIVES:
            raise ConfigError(f"{where}: lives must be one of {', '.join(LIVES)}, got {row.get('lives')!r}")
        every = row.get("meet_every_days")
        if not isinstance(every, int | float) or every < 1:
            raise ConfigError(f"{where}: meet_every_days must be a number of days >= 1, got {every!r}")
        name = str(row.get("name", "")).strip()
        if not name:
            raise ConfigError(f"{where}: name must not be empty")
        members[member_id] = Member(member_id, name, row["relation"], row["lives"], float(every))
    if not members:
        raise ConfigError("cast.toml: the cast needs at least one [member.ID]")
    return members


def first_met(seed_key: str, now: float) -> dict[str, float]:
    """When she last saw each member before her life began: a seeded share of their interval ago."""
    out = {}
    for member in cast().values():
        share = rng_for(seed_key, "cast", member.id).random()
        out[member.id] = round(now - share * member.meet_every_days * DAY, 3)
    return out


def overdue(met: dict[str, float], now: float, *, lives: str) -> list[tuple[Member, float]]:
    """Members living `lives` whom she is due to see, with how overdue (1 = exactly due), most overdue first."""
    out = []
    for member in cast().values():
        if member.lives != lives:
            continue
        last = met.get(member.id)
        ratio = 2.0 if last is None else (now - last) / (member.meet_every_days * DAY)
        if ratio >= 1.0:
            out.append((member, ratio))
    out.sort(key=lambda mr: (-mr[1], mr[0].id))
    return out


def parents() -> list[Member]:
    return [m for m in cast().values() if m.relation in FAMILY]
