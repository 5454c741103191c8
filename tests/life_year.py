"""A synthetic year of Scenes for narration tests: her kinds at plausible times on the real world of each date.

Not her day machine (helper "life" builds that): a seeded stand-in that lays a workday or rest-day schedule on
`world_day`, with companions, chats that interrupt, disappointments and a wandering mood, so narration can be
checked over every kind, moment and outcome on a year of real weather, sun and festivals.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from zoneinfo import ZoneInfo

from engine.life.scene import Companion, Moment, Outcome, Scene
from engine.life.world import WorldDay, world_day

ZONE = ZoneInfo("Asia/Shanghai")
CAST = (
    Companion("xiaomei", "小美", "friend"),
    Companion("azhe", "阿哲", "friend"),
    Companion("mom", "林秀芬", "mother"),
    Companion("dad", "陈建国", "father"),
    Companion("tingting", "婷婷", "cousin"),
    Companion("laozhou", "老周", "colleague"),
)
_WORKDAY = [("breakfast", 25), ("commute", 45), ("work", 150), ("lunch", 40), ("work", 200), ("commute", 45),
            ("dinner", 40)]
_EVENING = ["reading", "drama", "music", "drawing", "call_friend", "walk", "exercise", "journal", "study",
            "daydream", "chores", "laundry", "plants", "cook", "groceries"]
_DAYOFF = ["reading", "drama", "music", "drawing", "walk", "exercise", "meet_friend", "outing", "movie", "cafe",
           "bake", "shopping", "plants", "laundry", "chores", "groceries", "cook", "nap", "daydream", "study",
           "family_visit", "call_friend"]
_WITH = {"call_friend": ("xiaomei", "azhe", "mom", "tingting"), "meet_friend": ("xiaomei", "azhe", "tingting"),
         "family_visit": ("mom", "dad"), "festival": ("mom", "dad"), "dinner": ("xiaomei", "laozhou")}
_OUTDOOR = {"walk", "exercise", "meet_friend", "outing", "groceries", "shopping", "cafe"}


def _companion(kind: str, rng: random.Random) -> Companion | None:
    ids = _WITH.get(kind)
    if not ids or (kind == "dinner" and rng.random() < 0.8):
        return None
    wanted = rng.choice(ids)
    return next(c for c in CAST if c.id == wanted)


def _scene(kind: str, start: dt.datetime, minutes: int, world: WorldDay, rng: random.Random,
           valence: float) -> Iterator[Scene]:
    end = start + dt.timedelta(minutes=minutes)
    who = _companion(kind, rng)
    roll = rng.random()
    if kind not in ("commute", "work", "sleep") and roll < 0.08 and minutes >= 20:
        cut = start + dt.timedelta(minutes=rng.randint(5, minutes - 5))
        if rng.random() < 0.6:
            yield Scene(kind, Moment.RESUMED, start, cut, world, with_whom=who, valence=valence,
                        remaining_s=(end - cut).total_seconds())
            yield Scene(kind, Moment.COMPLETED, cut + dt.timedelta(minutes=15), end + dt.timedelta(minutes=15),
                        world, with_whom=who, valence=valence)
        else:
            yield Scene(kind, Moment.ABANDONED, start, cut, world, with_whom=who, valence=valence)
        return
    bad = rng.random() < (0.25 if kind in _OUTDOOR and world.weather in ("小雨", "大雨") else 0.07)
    yield Scene(kind, Moment.COMPLETED, start, end, world, outcome=Outcome.DISAPPOINTED if bad else Outcome.DONE,
                with_whom=who, valence=-0.5 if bad else valence)


def year_of_scenes(first: dt.date, days: int, city: str = "杭州", seed: str = "narr-test") -> list[Scene]:
    """Every scene of `days` days from `first`, in time order."""
    rng = random.Random(seed)
    valence = 0.1
    out: list[Scene] = []
    for offset in range(days):
        date = first + dt.timedelta(days=offset)
        world = world_day(date, city, seed)
        valence = max(-0.9, min(0.9, 0.8 * valence + rng.gauss(0.05, 0.25)))
        wake = dt.datetime.combine(date, dt.time(6, 30), ZONE) + dt.timedelta(minutes=rng.randint(-40, 90))
        bed_before = wake - dt.timedelta(minutes=rng.randint(420, 540))
        out.append(Scene("sleep", Moment.COMPLETED, bed_before, wake, world, valence=valence))
        clock = wake + dt.timedelta(minutes=rng.randint(5, 20))
        out.append(Scene("wash", Moment.COMPLETED, clock, clock + dt.timedelta(minutes=15), world, valence=valence))
        clock += dt.timedelta(minutes=20)
        if world.spring_festival or world.festival in ("中秋节", "端午节", "元宵节"):
            plan = [("breakfast", 30), ("family_visit", 240), ("lunch", 60), ("festival", 180), ("dinner", 90),
                    ("drama", 90)]
        elif world.is_day_off:
            plan = [("breakfast", 35)] + [(rng.choice(_DAYOFF), rng.randint(30, 150)) for _ in range(3)]
            plan += [("lunch", 45)] + [(rng.choice(_DAYOFF), rng.randint(30, 150)) for _ in range(3)]
            plan += [("dinner", 50), (rng.choice(_EVENING), rng.randint(30, 120))]
        else:
            plan = [(k, m + rng.randint(-10, 10)) for k, m in _WORKDAY]
            plan += [(rng.choice(_EVENING), rng.randint(20, 100)) for _ in range(2)]
        for kind, minutes in plan:
            out.extend(_scene(kind, clock, max(5, minutes), world, rng, valence))
            clock = out[-1].ended + dt.timedelta(minutes=rng.randint(0, 15))
    return out
