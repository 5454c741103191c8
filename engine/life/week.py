"""Her week: her role (from data/roles.toml) and what a day of her calendar asks of her (pure).

Workdays and make-up workdays (调休) are work or class days; weekends and statutory holidays are off; the
Spring Festival (除夕..初六) is lived at her parents', travelling home on 除夕 and back on 初六.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine import feelings
from engine.errors import ConfigError
from engine.life.calendar import DayKind, in_spring_festival
from engine.life.localtime import MINUTE, at_local, rng_for
from engine.life.trip import Away, away_on, eatery, stay, train_back, train_there
from engine.life.world import WorldDay


@dataclass(frozen=True)
class Role:
    """A weekly rhythm: when and where she works, how she gets there, and the words of her working day."""

    name: str                 # the stable id stored in her file (illustrator, teacher ...)
    work_kind: str            # the catalogue kind of her working blocks (work, or study for classes)
    place: str                # 工作室 / 公司 / 学校 / 医院 / 家
    start_h: float            # local clock hour work starts
    end_h: float              # ... and ends
    lunch_h: tuple[float, float]
    commute_min: tuple[int, int]  # each way; (0, 0) works from home
    commute_place: str
    flex_h: float             # seeded daily spread of the start (a freelancer starts when she starts)
    overtime: float           # chance of staying up to an hour later
    title: str = ""           # what she calls her job (插画师, 中学老师 ...)
    draws: bool = True        # her work is drawing: the illustration projects and a client's revisions
    doing: tuple[str, ...] = ()       # what she does in a working block (a role that does not draw)
    bad_day: tuple[str, ...] = ()     # what goes wrong at work, as a clause
    good_cause: tuple[str, ...] = ()  # what made a working day good, as a thing she thinks of
    bad_cause: tuple[str, ...] = ()   # what made a working day bad, as a thing she thinks of
    cause_feel: tuple[tuple[str, str], ...] = ()  # (cause, feeling) where a cause names the feeling it leaves


@cache
def role_causes(r: Role) -> dict[str, tuple[str, ...]] | None:
    """The causes of a good and a bad working day in her role's words (engine/feelings.py activity_raises);
    None for a role that draws, whose causes are the feelings table's own (a client's revisions, praise)."""
    return None if r.draws else {"good": r.good_cause, "bad": r.bad_cause}


@cache
def cause_feelings(r: Role) -> dict[str, str]:
    """The feeling each of her role's causes leaves, where roles.toml names one (feelings.activity_raises)."""
    return dict(r.cause_feel)


WORKPLACES = frozenset({"工作室", "公司", "学校", "医院", "家"})
WORK_KINDS = frozenset({"work", "study"})


def _texts(where: str, raw: dict[str, Any], key: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ConfigError(f"{where} {key} must be a list of sentences")
    return tuple(value)


def _causes(where: str, raw: dict[str, Any], key: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """A list of causes, each a phrase or {t = phrase, feel = feeling}: the phrases, and (phrase, feeling) pairs."""
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{where} {key} must be a list of phrases")
    known = feelings.table().kinds
    texts, feel = [], []
    for item in value:
        if isinstance(item, dict) and set(item) <= {"t", "feel"} and isinstance(item.get("t"), str) and item["t"]:
            if item.get("feel") not in known:
                raise ConfigError(f"{where} {key}: {item['t']!r} feel must be one of {sorted(known)}, "
                                  f"got {item.get('feel')!r}")
            texts.append(item["t"])
            feel.append((item["t"], str(item["feel"])))
        elif isinstance(item, str) and item:
            texts.append(item)
        else:
            raise ConfigError(f"{where} {key} must list phrases or {{t = phrase, feel = feeling}}, got {item!r}")
    return tuple(texts), tuple(feel)


def _parse_role(name: str, raw: dict[str, Any]) -> Role:
    where = f"engine/life/data/roles.toml: [role.{name}]"
    try:
        title, work_kind, place = str(raw["title"]), str(raw["work_kind"]), str(raw["workplace"])
        start_h, end_h = (float(x) for x in raw["hours"])
        lunch = tuple(float(x) for x in raw["lunch"])
        commute = tuple(int(x) for x in raw["commute_min"])
        commute_place, flex_h, overtime = str(raw["commute_place"]), float(raw["flex_h"]), float(raw["overtime"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where} needs title, work_kind, workplace, hours, lunch, commute_min, commute_place, "
                          f"flex_h and overtime ({exc!r})") from exc
    if work_kind not in WORK_KINDS or place not in WORKPLACES:
        raise ConfigError(f"{where} work_kind must be one of {sorted(WORK_KINDS)} and workplace one of "
                          f"{sorted(WORKPLACES)}, got {work_kind!r}, {place!r}")
    if not (0 <= start_h < lunch[0] < lunch[1] < end_h <= 24) or len(lunch) != 2:
        raise ConfigError(f"{where} hours and lunch must be clock hours with start < lunch start < lunch end < end")
    if len(commute) != 2 or not 0 <= commute[0] <= commute[1] or not 0 <= overtime <= 1 or flex_h < 0:
        raise ConfigError(f"{where} commute_min must be [shortest, longest] >= 0, overtime a chance, flex_h >= 0")
    draws = raw.get("draws", False)
    if not isinstance(draws, bool):
        raise ConfigError(f"{where} draws must be true or false, got {draws!r}")
    words = {key: _texts(where, raw, key) for key in ("doing", "bad_day")}
    words["good_cause"], good_feel = _causes(where, raw, "good_cause")
    words["bad_cause"], bad_feel = _causes(where, raw, "bad_cause")
    missing = [key for key, value in words.items() if not value]
    if work_kind == "work" and not draws and missing:
        raise ConfigError(f"{where} a working role that does not draw needs {', '.join(missing)}: "
                          "the words of her working day")
    return Role(name=name, work_kind=work_kind, place=place, start_h=start_h, end_h=end_h,
                lunch_h=(lunch[0], lunch[1]), commute_min=(commute[0], commute[1]), commute_place=commute_place,
                flex_h=flex_h, overtime=overtime, title=title, draws=draws, cause_feel=good_feel + bad_feel, **words)


@cache
def roles() -> dict[str, Role]:
    """Every role by id, from data/roles.toml, validated once; a bad data file is a ConfigError naming the field."""
    text = (resources.files("engine.life") / "data" / "roles.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text).get("role", {})
    return {name: _parse_role(name, raw) for name, raw in table.items()}


def role_id(name: str) -> str | None:
    """The role id for an id or a Chinese title (插画师 -> illustrator), or None when no role is called that."""
    known = roles()
    if name in known:
        return name
    return next((rid for rid, r in known.items() if r.title == name), None)


def role(name: str) -> Role:
    """The role called `name` (its id or its title); a ConfigError naming the known ones otherwise."""
    rid = role_id(name)
    if rid is None:
        known = ", ".join(f"{rid} ({r.title})" for rid, r in roles().items())
        raise ConfigError(f"unknown role {name!r}: known roles are {known}; add one to engine/life/data/roles.toml")
    return roles()[rid]


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
    elif world.festival == "除夕":   # reached abroad only (at home 除夕 is a family day): a video call home at night
        call = at_local(day, 20.5 + rng.uniform(0, 0.5), tz)
        out.append(Anchor("call_home", "call_friend", call, call + rng.randint(40, 70) * MINUTE, "家"))
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
