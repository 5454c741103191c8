"""Her week: a role (illustrator, student, freelance) and what a day of her calendar asks of her (pure).

Workdays and make-up workdays (调休) are work or class days; weekends and statutory holidays are off; the
Spring Festival (除夕..初六) is lived at her parents', travelling home on 除夕 and back on 初六.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from engine.errors import ConfigError
from engine.life.calendar import DayKind, in_spring_festival
from engine.life.localtime import MINUTE, at_local, rng_for
from engine.life.trip import Away, away_on, eatery, stay, train_back, train_there
from engine.life.world import WorldDay


@dataclass(frozen=True)
class Role:
    """A weekly rhythm: when and where she works, and how she gets there."""

    name: str
    work_kind: str            # the catalogue kind of her working blocks (work, or study for classes)
    place: str                # 工作室 / 学校 / 家
    start_h: float            # local clock hour work starts
    end_h: float              # ... and ends
    lunch_h: tuple[float, float]
    commute_min: tuple[int, int]  # each way; (0, 0) works from home
    commute_place: str
    flex_h: float             # seeded daily spread of the start (a freelancer starts when she starts)
    overtime: float           # chance of staying up to an hour later


ROLES: dict[str, Role] = {
    # The demo default: an illustrator at a small studio, Mon-Fri 9:30-18:00, a metro ride each way.
    "illustrator": Role("illustrator", "work", "工作室", 9.5, 18.0, (12.0, 13.0), (35, 50), "地铁上", 0.1, 0.25),
    "student": Role("student", "study", "学校", 8.0, 17.0, (11.75, 13.5), (15, 25), "骑车路上", 0.0, 0.0),
    "freelance": Role("freelance", "work", "家", 10.0, 17.0, (12.5, 13.5), (0, 0), "家", 1.0, 0.15),
}


def role(name: str) -> Role:
    if name not in ROLES:
        raise ConfigError(f"config.toml: [life] role must be one of {', '.join(ROLES)}, got {name!r}")
    return ROLES[name]


@dataclass(frozen=True)
class Anchor:
    """A fixed point of her day: she starts `kind` at `at` (until `end` if the world fixes it)."""

    key: str
    kind: str
    at: float
    end: float | None
    place: str


def shape_of(world: WorldDay, seed_key: str | None = None) -> str:
    """work | off | family | trip: what the date asks of her (with her seed: where her golden week takes her)."""
    if world.spring_festival:
        return "family"
    # the golden week away only where her own calendar has the holiday (a companion abroad may not)
    away = away_on(seed_key, world.date, world.city) if seed_key and world.is_day_off else None
    if away is not None:
        return away.how
    if world.day_kind in (DayKind.WORKDAY, DayKind.MAKEUP_WORKDAY):
        return "work"
    return "off"


# Issue 24 item 5: she left at 18:00 sharp on 78 % of workdays. Before a deadline (her project nearly due) she
# mostly stays late, for one to two and a half hours; on an ordinary day she may stay up to an hour (the role's
# `overtime` chance) or a little to finish something off.
CRUNCH_LATE = (0.8, (60, 150))
WRAP_UP = (0.4, (5, 30))


def work_anchors(r: Role, day: str, tz: str, seed_key: str, crunch: bool = False) -> list[Anchor]:
    """Commute, morning block, lunch, afternoon block, commute home, for a working day (seeded per day).

    `crunch`: a deadline is near, so she likely works late."""
    rng = rng_for(seed_key, day, "work")
    start = at_local(day, r.start_h + rng.uniform(-r.flex_h, r.flex_h), tz)
    roll, late = rng.random(), 0.0
    if r.overtime > 0:
        if crunch and roll < CRUNCH_LATE[0]:
            late = rng.uniform(*CRUNCH_LATE[1])
        elif roll < r.overtime:
            late = rng.uniform(15, 60)
        elif roll < r.overtime + WRAP_UP[0]:
            late = rng.uniform(*WRAP_UP[1])
    end = at_local(day, r.end_h, tz) + late * MINUTE
    lunch_at, lunch_end = at_local(day, r.lunch_h[0], tz), at_local(day, r.lunch_h[1], tz)
    out: list[Anchor] = []
    there = rng.randint(*r.commute_min) * MINUTE if r.commute_min[1] else 0.0
    back = rng.randint(*r.commute_min) * MINUTE if r.commute_min[1] else 0.0
    if there:
        out.append(Anchor("commute_am", "commute", start - there, start, r.commute_place))
    out.append(Anchor("work_am", r.work_kind, start, lunch_at, r.place))
    # Lunch takes as long as lunch; the rest of the break is hers (a book, a song, a 午休 nap at her desk).
    out.append(Anchor("lunch", "lunch", lunch_at, None, "公司附近" if r.place != "家" else "家"))
    out.append(Anchor("work_pm", r.work_kind, lunch_end, end, r.place))
    if back:
        out.append(Anchor("commute_pm", "commute", end, end + back, r.commute_place))
    return out


def leave_by(r: Role, day: str, tz: str, seed_key: str) -> float | None:
    """When her alarm must have woken her on a working `day`: first anchor minus breakfast and getting ready."""
    first = work_anchors(r, day, tz, seed_key)[0].at
    return first - 50 * MINUTE


def family_anchors(world: WorldDay, day: str, tz: str, seed_key: str) -> list[Anchor]:
    """The Spring Festival at her parents': the trip home on 除夕, 年夜饭 and 守岁, 拜年 on 初一, the trip back."""
    rng = rng_for(seed_key, day, "family")
    out: list[Anchor] = []
    away = away_on(seed_key, world.date, world.city)
    if away is not None and not world.spring_festival:   # the 国庆 golden week at her parents' (issue 24 item 4)
        if world.date == away.first:
            leave = at_local(day, 8.5 + rng.uniform(0, 1.5), tz)
            out.append(Anchor("travel_home", "commute", leave, leave + rng.randint(150, 210) * MINUTE,
                              "回老家的高铁上"))
        elif world.date == away.back:
            leave = at_local(day, 14.0 + rng.uniform(0, 1.5), tz)
            out.append(Anchor("travel_back", "commute", leave, leave + rng.randint(150, 210) * MINUTE,
                              "回城的高铁上"))
        if world.festival == "中秋节":   # with them this year: 月饼 and the moon together, no call home
            moon = at_local(day, 19.75 + rng.uniform(0, 0.5), tz)
            out.append(Anchor("moon", "festival", moon, moon + rng.randint(60, 90) * MINUTE, "老家"))
        return out
    if world.festival == "除夕":
        leave = at_local(day, 9.0 + rng.uniform(0, 1.0), tz)
        out.append(Anchor("travel_home", "commute", leave, leave + rng.randint(150, 210) * MINUTE, "回老家的高铁上"))
        out.append(Anchor("nianyefan", "dinner", at_local(day, 18.0, tz), at_local(day, 19.75, tz), "老家"))
        out.append(Anchor("shousui", "festival", at_local(day, 20.0, tz), at_local(day, 23.6, tz), "老家"))
    elif world.festival == "春节":
        out.append(Anchor("bainian", "festival", at_local(day, 9.5, tz), at_local(day, 11.75, tz), "亲戚家"))
    elif _last_day_home(world):
        leave = at_local(day, 14.0 + rng.uniform(0, 1.5), tz)
        out.append(Anchor("travel_back", "commute", leave, leave + rng.randint(150, 210) * MINUTE, "回城的高铁上"))
    return out


def festival_anchors(world: WorldDay, day: str, tz: str, seed_key: str) -> list[Anchor]:
    """Festivals lived where she is (issue 24 item 4): on 中秋 a video call home in the evening and the moon after
    it; on 清明 a call home in the morning (her parents have been to the graves; she remembers from afar); on 重阳
    a call home (in the evening of a workday)."""
    rng = rng_for(seed_key, day, "festival")
    out: list[Anchor] = []
    if world.festival == "中秋节":
        call = at_local(day, 20.0 + rng.uniform(0, 0.5), tz)
        out.append(Anchor("call_home", "call_friend", call, call + rng.randint(25, 45) * MINUTE, "家"))
        moon = call + 60 * MINUTE
        out.append(Anchor("moon", "walk", moon, moon + rng.randint(25, 40) * MINUTE, "楼下"))
    elif world.festival in ("清明节", "重阳节"):   # 重阳: a call to her parents is how she marks it from afar
        call = at_local(day, (10.0 if world.festival == "清明节" or world.is_day_off else 20.5) + rng.uniform(0, 1.0),
                        tz)
        out.append(Anchor("call_home", "call_friend", call, call + rng.randint(20, 35) * MINUTE, "家"))
    return out


def trip_anchors(world: WorldDay, day: str, tz: str, seed_key: str) -> list[Anchor]:
    """A golden-week trip (issue 24 item 4): the train there on the first morning and a first sight in the
    afternoon; on each day between, a sight in the morning and one in the afternoon; the last morning a sight,
    then the train home. Meals there are at a local eatery, nights at a guesthouse (make_plan)."""
    away = away_on(seed_key, world.date, world.city)
    if away is None or away.trip is None:
        return []
    trip, rng = away.trip, rng_for(seed_key, day, "trip")
    spots = trip.spots
    index = away.day_index(world.date)
    out: list[Anchor] = []
    if world.date == away.first:
        leave = at_local(day, 8.0 + rng.uniform(0, 1.0), tz)
        arrive = leave + rng.uniform(*trip.hours) * 60 * MINUTE
        out.append(Anchor("travel_there", "commute", leave, arrive, train_there(trip)))
        if arrive < at_local(day, 15.0, tz):
            see = max(arrive + 90 * MINUTE, at_local(day, 14.0, tz))
            out.append(Anchor("sight_pm", "outing", see, see + rng.randint(100, 150) * MINUTE, spots[0]))
        return out
    morning = at_local(day, 9.0 + rng.uniform(0, 0.75), tz)
    out.append(Anchor("sight_am", "outing", morning, morning + rng.randint(120, 160) * MINUTE,
                      spots[(2 * index - 1) % len(spots)]))
    if world.date == away.back:
        leave = at_local(day, 14.0 + rng.uniform(0, 1.0), tz)
        out.append(Anchor("travel_back", "commute", leave, leave + rng.uniform(*trip.hours) * 60 * MINUTE,
                          train_back(trip)))
    else:
        after = at_local(day, 14.5 + rng.uniform(0, 0.5), tz)
        out.append(Anchor("sight_pm", "outing", after, after + rng.randint(120, 180) * MINUTE,
                          spots[(2 * index) % len(spots)]))
    return out


def trip_places(world: WorldDay, seed_key: str) -> tuple[str, str] | None:
    """Where she eats and stays today on a trip (eatery, guesthouse); None when she is not away on one."""
    away: Away | None = away_on(seed_key, world.date, world.city)
    if away is None or away.trip is None:
        return None
    return eatery(away.trip), stay(away.trip)


def _last_day_home(world: WorldDay) -> bool:
    return not in_spring_festival(world.date + dt.timedelta(days=1))
