"""What she does next: the anchor that is due, or a seeded free choice steered by energy, mood, weather and needs.

Pure: every input is in `Situation`, so the same situation gives the same choice (replay), and the forecast of
the next activity (engine/life/machine.py preview) is this same function on the forecast situation.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from engine.life.cast import Member, cast, parents
from engine.life.catalogue import CATEGORY_WHY, MEALS, ROUTINE_CATEGORIES, ActivitySpec, catalogue
from engine.life.localtime import HOUR, MINUTE, local_hour, rng_for
from engine.life.plan import DayPlan, after_anchor, next_anchor
from engine.life.week import Anchor, trip_places
from engine.life.world import WorldDay
from engine.persona import Persona

RAIN = ("小雨", "大雨")
# How much the weather keeps her from an outdoor kind (1 = no effect).
WEATHER_APPEAL = {"晴": 1.4, "多云": 1.1, "阴": 0.9, "小雨": 0.15, "大雨": 0.05, "雪": 0.4, "雾": 0.5}
# At her parents' for the Spring Festival she does what one does at home with family.
FAMILY_KINDS = frozenset({"family_visit", "reading", "drama", "walk", "daydream", "call_friend", "music", "journal",
                          "outing"})
# Away on a golden-week trip she does what one does between sights at a guesthouse (issue 24 item 4).
TRIP_KINDS = frozenset({"reading", "daydream", "call_friend", "journal", "drama", "cafe"})
OFF_DAY_KINDS = {"outing": 3.0, "meet_friend": 2.0, "movie": 2.0, "shopping": 2.5, "cafe": 2.0, "bake": 2.0,
                 "cook": 1.5, "chores": 1.5}
# Chores that come from her household state; when not due they keep only this share of their appeal.
STATE_CHORES = {"groceries": 0.1, "laundry": 0.05, "plants": 0.03}
NEEDED_WEIGHT = 6.0
# In the lunch break at her workplace she can only do what one does at a desk or just outside.
AT_WORK_KINDS = frozenset({"reading", "music", "call_friend", "walk", "drama", "journal", "study"})          # a due chore (empty fridge, full basket, dry plants) is this much more likely
LOW_MOOD_DV = -0.06          # valence this far under her baseline turns her to comfort, contact, staying in
NAP_HOURS = (13.0, 16.5)


@dataclass(frozen=True)
class Situation:
    """Everything her next choice depends on."""

    seed_key: str
    t: float
    plan: DayPlan
    persona: Persona
    world: WorldDay
    energy: float
    mood_dev: tuple[float, float]     # (valence, arousal) minus her baseline
    last_social_at: float | None
    previous: str | None
    tz: str
    tired_energy: float
    lonely_after_h: float
    needs: frozenset[str]
    friends_due: tuple[Member, ...]   # same-city people she is due to meet, most overdue first
    family_due: tuple[Member, ...]    # hometown people she is due to call
    sleep_end: float | None = None


@dataclass(frozen=True)
class Choice:
    kind: str
    why: str
    end: float
    anchor: str | None = None         # the plan anchor it fulfils
    place: str | None = None
    with_id: str | None = None        # the cast member she does it with


def choose(s: Situation) -> Choice:
    """Her next activity at s.t, its motive and planned end (never past the next anchor)."""
    specs = catalogue()
    plan, t = s.plan, s.t
    anchor = next_anchor(plan, t)
    rng = rng_for(s.seed_key, plan["day"], "choose", round(t, 3))
    if anchor.at <= t + 60:
        return _anchor_choice(s, anchor, rng, specs)
    room = anchor.at - t
    hour = local_hour(t, s.tz)
    wake = plan.get("wake_at")
    awake_h = (t - wake) / HOUR if wake is not None else 24.0
    bed_h = (plan["sleep_at"] - t) / HOUR
    if s.previous == "sleep" and room >= 3 * MINUTE:
        opening = _waking_routine(s, rng, anchor.at, room)
        if opening == "anchor":   # straight to breakfast, a little early
            return _anchor_choice(s, anchor, rng, specs)
        if isinstance(opening, Choice):
            return opening
    if (plan.get("desk_nap") and plan["naps"] == 0 and _between_work_blocks(s) and s.previous == "lunch"
            and room >= 15 * MINUTE):
        # 午休 (issue 24 item 5): after lunch she puts her head down on her desk until the afternoon starts
        end = min(anchor.at, t + rng.randint(15, 35) * MINUTE)
        return Choice("nap", "tired", anchor.at if anchor.at - end < 15 * MINUTE else end, place="工位")
    if plan["naps"] == 0 and NAP_HOURS[0] <= hour < NAP_HOURS[1] and room >= 25 * MINUTE and bed_h > 4 and (
            plan.get("nap") or s.energy < s.tired_energy):
        return Choice("nap", "tired", min(anchor.at, t + _draw_minutes(rng, specs["nap"]) * MINUTE))
    if s.energy < s.tired_energy and bed_h > 3:
        return Choice("daydream", "tired", min(anchor.at, t + _draw_minutes(rng, specs["daydream"]) * MINUTE))
    candidates = _candidates(s, specs, room, hour, awake_h, bed_h)
    if not candidates:
        # Nothing fits (too little room, too tired): a short rest, then she looks again; never hours of it.
        return Choice("daydream", "relax" if s.energy >= s.tired_energy else "tired",
                      min(anchor.at, t + _draw_minutes(rng, specs["daydream"]) * MINUTE))
    total = sum(w for _, w, _ in candidates)
    pick = rng.uniform(0, total)
    kind, _, why = candidates[-1]
    for candidate in candidates:
        pick -= candidate[1]
        if pick <= 0:
            kind, _, why = candidate
            break
    end = min(anchor.at, t + _draw_minutes(rng, specs[kind]) * MINUTE)
    if anchor.at - end < 15 * MINUTE:
        end = anchor.at  # no scraps of time before a meal or bed: she just keeps going a little longer
    return Choice(kind, why, end, place=_place(s, kind, specs), with_id=_with(s, kind, rng))


# How her mornings open (issue 24: every day opened with 发呆): lying in with the phone, straight to washing up,
# or whatever she chooses next (a moment at the window among it).
WAKE_PHONE, WAKE_WASH = 0.4, 0.3
SCRAP_S = 8 * MINUTE   # a gap this short before the next anchor is not left over as a scrap of 发呆


def _waking_routine(s: Situation, rng: random.Random, until: float, room: float) -> Choice | str | None:
    """How this morning opens: a Choice, "anchor" (straight to what is next, e.g. breakfast), or None (a free
    choice)."""
    pick = rng.random()
    if room < 12 * MINUTE + SCRAP_S:
        # breakfast is nearly due: a few minutes with the phone in bed, up and washed, or straight to breakfast
        if pick < WAKE_PHONE:
            return Choice("phone", "relax", until, place="被窝里")
        if pick < WAKE_PHONE + WAKE_WASH:
            return Choice("wash", "routine", until, place="家")
        return "anchor"
    def ending(end: float) -> float:
        return until if until - end < SCRAP_S else min(until, end)

    if pick < WAKE_PHONE:
        return Choice("phone", "relax", ending(s.t + 5 * rng.randint(2, 8) * MINUTE), place="被窝里")
    if pick < WAKE_PHONE + WAKE_WASH:
        return Choice("wash", "routine", ending(s.t + rng.randint(10, 20) * MINUTE), place="家")
    return None


def _anchor_choice(s: Situation, anchor: Anchor, rng: random.Random, specs: dict[str, ActivitySpec]) -> Choice:
    t = s.t
    if anchor.kind == "sleep":
        end = s.sleep_end if s.sleep_end is not None else t + 8 * HOUR
        return Choice("sleep", "sleepy" if s.energy < s.tired_energy else "routine", end, anchor="sleep", place="家")
    spec = specs[anchor.kind]
    nxt = after_anchor(s.plan, anchor.key, t).at
    if anchor.end is not None:
        # A fixed block (work, a train): it ends when the world says; a late start of a journey still takes
        # as long as the journey.
        end = anchor.end
        if anchor.kind == "commute" and anchor.at < t:
            end = t + (anchor.end - anchor.at)
    else:
        lo, hi = spec.minutes
        end = min(t + rng.randint(lo, hi) * MINUTE, max(nxt, t + lo * MINUTE))
        if 0 < nxt - end < SCRAP_S:
            end = nxt   # no one-minute 发呆 before the next thing: breakfast simply takes a little longer
    why = {"meal": "hungry", "work": "work", "commute": "routine", "care": "routine",
           "festival": "festival"}.get(spec.category, "routine")
    with_id = None
    done = s.plan.get("done", ())
    travels_home = any(a[0] == "travel_home" for a in s.plan["anchors"])
    at_home_town = "travel_back" not in done and (not travels_home or "travel_home" in done)
    if s.plan.get("shape") == "family" and anchor.kind in ("festival", *MEALS) and at_home_town:
        # with her parents only while she is there: not before the train home, not after the train back (issue 24)
        with_id = next((m.id for m in parents()), None)
    if anchor.key == "call_home":   # a festival call home (中秋, 清明): to her mother
        with_id = next((m.id for m in parents()), None)
    place = anchor.place
    if anchor.kind in MEALS and place == "家" and "eat_out" in s.needs:
        place = "外面的小馆子"
    return Choice(anchor.kind, why, max(end, t + 60.0), anchor=anchor.key, place=place, with_id=with_id)


def _candidates(s: Situation, specs: dict[str, ActivitySpec], room: float, hour: float, awake_h: float,
                bed_h: float) -> list[tuple[str, float, str]]:
    dv, da = s.mood_dev
    low_mood = dv < LOW_MOOD_DV
    lonely = (s.last_social_at is None or s.t - s.last_social_at > s.lonely_after_h * HOUR) \
        and s.persona.sociability > 0.35
    shape = s.plan.get("shape", "off")
    at_work = shape == "work" and _between_work_blocks(s)
    counts = s.plan.get("counts", {})
    weather = WEATHER_APPEAL.get(s.world.weather, 1.0)
    # Good mood and arousal take her out; low mood keeps her in (a smooth factor, so any change in mood
    # changes the odds, not only crossing a threshold).
    go_out = math.exp(2.5 * dv + 1.5 * da)
    out: list[tuple[str, float, str]] = []
    for kind, spec in specs.items():
        if spec.category in ROUTINE_CATEGORIES or kind in ("nap", "daydream") or kind == s.previous:
            continue
        if spec.minutes[0] * MINUTE > room or s.energy < spec.min_energy or not _in_hours(hour, spec.hours):
            continue
        if awake_h < spec.after_wake_h or bed_h < spec.before_bed_h:
            continue
        if shape == "family" and kind not in FAMILY_KINDS:
            continue
        if shape == "trip" and kind not in TRIP_KINDS:
            continue
        if s.plan.get("sick") not in (None, "last") and (spec.category == "exercise" or spec.min_energy >= 0.5
                                                          or (spec.out and kind not in s.needs)):
            continue   # with a cold she stays in: no run, no outing, no evening out (issue 24 item 5)
        if at_work and kind not in AT_WORK_KINDS:
            continue
        if kind == "family_visit" and shape != "family":
            continue
        if kind == "meet_friend" and not s.friends_due:
            continue
        if spec.daylight and hour + spec.minutes[0] / 60 > _dusk_h(s):
            continue   # an outing is for daylight (an evening walk after dinner is not)
        done_today = int(counts.get(kind, 0))
        if done_today >= spec.max_per_day:
            continue
        # Variety: each time she already did it today halves its appeal.
        weight = s.persona.prefs.get(spec.category, 1.0) / (1.0 + done_today)
        why = CATEGORY_WHY.get(spec.category, "routine")
        if shape != "work":
            weight *= OFF_DAY_KINDS.get(kind, 1.0)
        if shape == "family" and kind == "family_visit":
            weight *= 6.0
            why = "family"
        if spec.outdoor:
            weight *= weather
        if spec.out:
            weight *= go_out
            if dv > 0.03 and da > -0.05:
                why = "good_mood"
        if kind in s.needs:
            weight *= NEEDED_WEIGHT
            why = "needed"
        elif kind in STATE_CHORES:
            weight *= STATE_CHORES[kind]   # a chore that is not due yet is rarely done anyway
        if kind == "meet_friend":
            weight *= 2.0    # someone is due: she has been meaning to see them
        if kind == "call_friend" and s.family_due:
            weight *= 2.0
        if low_mood and spec.comfort:
            weight *= 1.0 + min(3.0, -dv * 25.0)
            why = "low_mood"
        if low_mood and kind in ("call_friend", "meet_friend"):
            weight *= 2.0    # contact: she reaches out when she is down
            why = "low_mood"
        if lonely and spec.category == "social":
            weight *= 1.0 + 4.0 * s.persona.sociability
            why = "lonely"
        if weight > 0:
            out.append((kind, weight, why))
    return out


def _between_work_blocks(s: Situation) -> bool:
    """In a break of her working day (after the morning block, before the afternoon one): she is at work."""
    blocks = [(at, end) for _, kind, at, end, place in s.plan["anchors"] if kind in ("work", "study") and place != "家"]
    return bool(blocks) and min(at for at, _ in blocks) <= s.t < max(end for _, end in blocks)


def _dusk_h(s: Situation) -> float:
    dusk = s.world.dusk
    return dusk.hour + dusk.minute / 60.0


def _place(s: Situation, kind: str, specs: dict[str, ActivitySpec]) -> str:
    if s.plan.get("shape") == "family" and (not specs[kind].out or kind == "family_visit"):
        return "老家"   # staying at her parents': time with them is at their home
    if s.plan.get("shape") == "trip" and not specs[kind].out:
        places = trip_places(s.world, s.seed_key)
        back = [a[3] for a in s.plan["anchors"] if a[0] == "travel_back" and a[3] is not None]
        if places is not None and not (back and s.t >= back[0]):
            return places[1]   # her guesthouse until the train has brought her home
    return specs[kind].place


def _with(s: Situation, kind: str, rng: random.Random) -> str | None:
    if kind == "meet_friend" and s.friends_due:
        return s.friends_due[0].id
    if kind == "call_friend":
        if s.family_due and s.plan.get("shape") != "family":   # at her parents' she calls a friend, not them
            return s.family_due[0].id
        friends = sorted(m.id for m in cast().values() if m.relation in ("friend", "cousin", "colleague"))
        return rng.choice(friends) if friends else None
    if kind == "family_visit":
        return next((m.id for m in parents()), None)
    return None


def _draw_minutes(rng: random.Random, spec: ActivitySpec) -> int:
    lo, hi = spec.minutes
    return 5 * round(rng.randint(lo, hi) / 5) if hi - lo >= 5 else lo


def _in_hours(hour: float, hours: tuple[float, float]) -> bool:
    lo, hi = hours
    return lo <= hour < hi or lo <= hour + 24.0 < hi
