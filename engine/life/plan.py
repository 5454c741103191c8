"""Her day plan, made when she wakes: the anchors (meals, work, commute, washing up, bed) relative to her wake time.

The plan is JSON in her saved day state. Anchors come from her role and the day's world (engine/life/week.py);
meals sit relative to when she woke and her chronotype, not at fixed clock hours; bedtime comes from process S,
later before a rest day and after an exciting or a sad day, inside a window around 23:00 shifted by chronotype.
"""

from __future__ import annotations

from typing import Any

from engine import energy as energy_model
from engine.life.localtime import HOUR, MINUTE, at_local, local_hour, rng_for
from engine.life.week import (
    Anchor,
    Role,
    family_anchors,
    festival_anchors,
    shape_of,
    trip_anchors,
    trip_places,
    work_anchors,
)
from engine.life.world import WorldDay
from engine.persona import Persona

LATER_BEFORE_REST_H = 0.75   # she stays up later when tomorrow is free
MOOD_LATER_MAX_H = 0.5       # aroused or low, she goes to bed up to this much later
BEDTIME_SD_MIN = 22.0        # night-to-night spread of bedtime around the process-S forecast
NAP_BASE = {"work": 0.0, "off": 0.3, "family": 0.35, "trip": 0.1}   # chance of a nap on a day with a full night
NAP_PER_SHORT_H = 0.2        # ... plus this per hour slept under 7.5 h
NAP_FREE_WORKDAY = 0.12      # working from home she can lie down after lunch
# Issue 24 item 5: a less ideal routine. 午休: she puts her head down at her desk after lunch on this share of
# workdays (more after a short night or with a cold); a workday breakfast is skipped now and then, more often
# after a short night; a cold sends her to bed earlier and to a nap more often.
DESK_NAP = 0.3
SKIP_BREAKFAST = 0.35
LATE_MORNING_MIN = 80         # up less than this long before she leaves for work: a late morning
SKIP_AFTER_SHORT_NIGHT = 0.3
SHORT_NIGHT_H = 6.5
SICK_EARLIER_H = 0.75
SICK_NAP = 0.4


# Her day plan, JSON in her saved day state: "day" (YYYY-MM-DD), "shape" (week.shape_of: work, off, family, trip),
# "wake_at", "sleep_at", "anchors" ([key, kind, at, end, place] rows), "done" (anchor keys met), "naps" (taken),
# "nap" (one is planned), "counts" (activities begun, by kind); only on a day they are true: "desk_nap",
# "skipped_breakfast", "sick", "crunch"; marked by the day machine as the day goes: "cooked_at" (a dish cooked
# for dinner), "lay_awake" and "scrolled" (at bedtime).
DayPlan = dict[str, Any]


def sleep_window(day: str, persona: Persona, tz: str, half_width_h: float, later_h: float = 0.0) -> tuple[float, float]:
    """When her main sleep may start on `day`: 23:00 shifted by her chronotype (and `later_h`), +- half_width_h."""
    centre = 23.0 + persona.chronotype_shift_h + later_h
    return at_local(day, centre - half_width_h, tz), at_local(day, centre + half_width_h, tz)


def make_plan(seed_key: str, t: float, day: str, state_energy: energy_model.Energy,
              params: energy_model.EnergyParams, persona: Persona, tz: str, *, role: Role, world: WorldDay,
              tomorrow: WorldDay, woke_at: float | None, half_width_h: float, mood_dev: tuple[float, float],
              slept_h: float | None, crunch: bool = False, sick: str = "") -> DayPlan:
    """The anchors of her day from `t` (she woke at `woke_at`, or her life is picked up at `t`).

    `crunch`: her project is nearly due (she works late); `sick`: the day of a cold (engine/life/illness.py:
    she naps more and goes to bed earlier)."""
    rng = rng_for(seed_key, day, "plan")
    shape = shape_of(world, seed_key)
    shift = persona.chronotype_shift_h
    wake = woke_at if woke_at is not None else t
    anchors: list[Anchor] = []
    if shape == "work":
        anchors += work_anchors(role, day, tz, seed_key, crunch)
    elif shape == "family":
        anchors += family_anchors(world, day, tz, seed_key)
    elif shape == "trip":
        anchors += trip_anchors(world, day, tz, seed_key)
    if shape != "family":   # on a trip only the call home (no moon walk downstairs: she is not home)
        anchors += [a for a in festival_anchors(world, day, tz, seed_key) if shape != "trip" or a.key == "call_home"]
    fixed = {a.kind for a in anchors}
    # only on a late morning (up not long before she must leave, or after a short night)
    leave = min((a.at for a in anchors if a.kind in ("commute", "work", "study")), default=None)
    short_night = slept_h is not None and slept_h < SHORT_NIGHT_H
    late = leave is not None and (wake >= leave - LATE_MORNING_MIN * MINUTE or short_night)
    skipped = (shape == "work" and woke_at is not None and late and leave is not None
               and rng.random() < SKIP_BREAKFAST + (SKIP_AFTER_SHORT_NIGHT if short_night else 0.0))
    if skipped and leave is not None:
        # why there was no time: she lay in with her phone, then rushed to get ready (no course, no chores)
        ready = leave - rng.randint(12, 20) * MINUTE
        if ready > wake + 2 * MINUTE:
            anchors.append(Anchor("lie_in", "phone", wake + MINUTE, ready, "被窝里"))
        anchors.append(Anchor("ready", "wash", max(ready, wake + MINUTE), leave, "家"))
    if woke_at is not None and local_hour(wake, tz) < 10.5 and not skipped:
        breakfast = wake + rng.uniform(10, 20 if shape == "work" else 40) * MINUTE
        anchors.append(Anchor("breakfast", "breakfast", breakfast, None, "家"))
    if "lunch" not in fixed:
        # Lunch is hunger after waking (about 4.5 h), kept inside the hours people have lunch.
        hour = min(13.5, max(11.5, local_hour(wake, tz) + 4.5 + rng.uniform(-0.4, 0.4)))
        anchors.append(Anchor("lunch", "lunch", at_local(day, hour, tz), None, "家"))
    if "dinner" not in fixed:
        home = max((a.end or a.at for a in anchors if a.kind == "commute"), default=None)
        dinner = at_local(day, 18.3 + 0.5 * shift + rng.uniform(-0.3, 0.6), tz)
        if home is not None and shape == "work":
            dinner = max(dinner, home + rng.uniform(20, 50) * MINUTE)
        anchors.append(Anchor("dinner", "dinner", dinner, None, "家"))
    # Bedtime: process S says when she is sleepy; the day ahead and her mood move it.
    predicted = energy_model.crossing(state_energy.s, t, params, asleep=False)
    dv, da = mood_dev
    later = (LATER_BEFORE_REST_H if tomorrow.is_day_off or tomorrow.spring_festival else 0.0)
    later += min(MOOD_LATER_MAX_H, max(0.0, da) * 1.5 + max(0.0, -dv) * 1.5)
    if sick and sick != "last":
        later -= SICK_EARLIER_H
    # Habit adds to process C's phase: an evening type also keeps later evenings (half her chronotype shift).
    predicted += (later + 0.5 * shift) * HOUR + rng.gauss(0.0, BEDTIME_SD_MIN) * MINUTE
    lo, hi = sleep_window(day, persona, tz, half_width_h, later)
    sleep_at = min(max(predicted, lo), hi)
    last_fixed = max((a.end for a in anchors if a.end is not None), default=t)
    sleep_at = max(sleep_at, t + 30 * MINUTE, last_fixed + 20 * MINUTE)
    # Picked up mid-day (a restart), what is already over is not lived after the fact.
    anchors = [a for a in anchors if a.at < sleep_at - 30 * MINUTE
               and (a.at > t - 5 * MINUTE or (a.end is not None and a.end > t + 10 * MINUTE))]
    anchors.append(Anchor("wash", "wash", sleep_at - rng.uniform(20, 32) * MINUTE, sleep_at, "家"))
    anchors.sort(key=lambda a: a.at)
    if shape == "trip":
        anchors = _away_places(anchors, world, seed_key)
    short = max(0.0, 7.5 - slept_h) if slept_h is not None else 0.0
    nap_chance = NAP_BASE[shape] + (NAP_FREE_WORKDAY if shape == "work" and role.place == "家" else 0.0)
    nap_chance = min(0.9, nap_chance + (NAP_PER_SHORT_H * short if nap_chance > 0 else 0.0))
    if sick:
        nap_chance = min(0.9, nap_chance + SICK_NAP)
    desk_nap = shape == "work" and role.place != "家" and rng.random() < min(0.9, DESK_NAP + NAP_PER_SHORT_H * short
                                                                            + (SICK_NAP if sick else 0.0))
    plan: DayPlan = {"day": day, "shape": shape, "wake_at": woke_at, "sleep_at": round(sleep_at, 3),
            "anchors": [[a.key, a.kind, round(a.at, 3), None if a.end is None else round(a.end, 3), a.place]
                        for a in anchors],
            "done": [], "naps": 0, "nap": rng.random() < nap_chance, "counts": {}}
    # only what is true today is written, so a plain day's plan stays as it was
    for key, value in (("desk_nap", desk_nap), ("skipped_breakfast", skipped), ("sick", sick), ("crunch", crunch)):
        if value:
            plan[key] = value
    return plan


def _away_places(anchors: list[Anchor], world: WorldDay, seed_key: str) -> list[Anchor]:
    """On a trip she eats at a local eatery and washes at her guesthouse, until the train home has brought her back."""
    places = trip_places(world, seed_key)
    if places is None:
        return anchors
    eat, sleep = places
    home_at = max((a.end or a.at for a in anchors if a.key == "travel_back"), default=None)
    out = []
    for a in anchors:
        if a.place == "家" and (home_at is None or a.at < home_at):
            a = Anchor(a.key, a.kind, a.at, a.end, sleep if a.kind == "wash" or a.key == "breakfast" else eat)
        out.append(a)
    return out


def next_anchor(plan: DayPlan, t: float) -> Anchor:
    """The next anchor not yet done and not already over (else the main sleep)."""
    for key, kind, at, end, place in plan["anchors"]:
        if key in plan["done"] or (end is not None and end <= t + 5 * MINUTE):
            continue
        return Anchor(key, kind, min(at, plan["sleep_at"]), end, place)
    return Anchor("sleep", "sleep", plan["sleep_at"], None, "家")


def after_anchor(plan: DayPlan, key: str, t: float) -> Anchor:
    """The anchor after `key` is done (for bounding how long `key` may run)."""
    return next_anchor({**plan, "done": [*plan["done"], key]}, t)
