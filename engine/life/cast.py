"""Her cast: the friends and family she meets or calls (engine/data/cast.toml), and who is due to be seen.

A member is due when it has been longer than their `meet_every_days` since she last saw (same city) or called
(hometown) them; the longer overdue, the more she wants to. Pure over the `met` map her day state keeps.
Each companion has her own cast (`cast_of`): the places in her life (ids, relations) are the file's, the names
and intervals are drawn per companion from her seed, so two charts have different friends (issue 24 item 3).
A friend whose storyline settled her abroad (engine/life/story.py) is called, never met (`away`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from importlib import resources

from engine.errors import ConfigError
from engine.life.localtime import rng_for
from engine.life.scene import Companion

RELATIONS = ("friend", "mother", "father", "colleague", "cousin")
LIVES = ("same_city", "hometown")
FAMILY = ("mother", "father")
DAY = 86400.0
EVERY_SPREAD = (0.75, 1.35)   # her own interval with each member: this share of the file's meet_every_days
_ID = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


@dataclass(frozen=True)
class Member:
    id: str
    name: str
    relation: str
    lives: str
    meet_every_days: float
    names: tuple[str, ...] = ()

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
        pool = row.get("names", [])
        if not isinstance(pool, list) or not all(isinstance(n, str) and n.strip() for n in pool):
            raise ConfigError(f"{where}: names must be a list of non-empty names")
        members[member_id] = Member(member_id, name, row["relation"], row["lives"], float(every),
                                    tuple(n.strip() for n in pool))
    if not members:
        raise ConfigError("cast.toml: the cast needs at least one [member.ID]")
    return members


@lru_cache(maxsize=64)
def cast_of(seed_key: str) -> dict[str, Member]:
    """Her own cast: each member's name drawn from its pool (none twice) and her own interval, seeded by her key.

    The empty key is the file's cast as written (tests and tools that have no companion)."""
    if not seed_key:
        return cast()
    taken: set[str] = set()
    out: dict[str, Member] = {}
    for member in cast().values():
        rng = rng_for(seed_key, "cast_name", member.id)
        free = [n for n in member.names if n not in taken]
        name = rng.choice(free) if free else member.name
        taken.add(name)
        every = round(member.meet_every_days * rng.uniform(*EVERY_SPREAD), 2)
        out[member.id] = replace(member, name=name, meet_every_days=every)
    return out


def all_names() -> list[str]:
    """Every name a member of anyone's cast may have (for checks: a friend called 小雨 is no rain)."""
    return sorted({n for m in cast().values() for n in (m.name, *m.names)})


def first_met(seed_key: str, now: float) -> dict[str, float]:
    """When she last saw each member before her life began: a seeded share of their interval ago."""
    out = {}
    for member in cast_of(seed_key).values():
        share = rng_for(seed_key, "cast", member.id).random()
        out[member.id] = round(now - share * member.meet_every_days * DAY, 3)
    return out


def lives_of(member: Member, away: Iterable[str] = ()) -> str:
    """Where she can reach them: a friend settled abroad is as far as home (calls only)."""
    return "hometown" if member.id in away else member.lives


def overdue(met: dict[str, float], now: float, *, lives: str, seed_key: str = "",
            away: Iterable[str] = ()) -> list[tuple[Member, float]]:
    """Members living `lives` whom she is due to see, with how overdue (1 = exactly due), most overdue first.

    `seed_key` picks her own cast (cast_of); `away`: ids of members who moved abroad (reached by a call)."""
    gone = frozenset(away)
    out = []
    for member in cast_of(seed_key).values():
        if lives_of(member, gone) != lives:
            continue
        last = met.get(member.id)
        ratio = 2.0 if last is None else (now - last) / (member.meet_every_days * DAY)
        if ratio >= 1.0:
            out.append((member, ratio))
    out.sort(key=lambda mr: (-mr[1], mr[0].id))
    return out


def parents() -> list[Member]:
    return [m for m in cast().values() if m.relation in FAMILY]
