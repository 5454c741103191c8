"""Her day machine: one pure transition (an activity ends, the next begins) returning the effects the caller writes.

`LifeState` (engine/life/state.py) is the one name for her day state. A transition reads it and the activity that ends, and returns the new state and a list of effects (engine/life/effects.py: end activity,
life event, mood push, start activity); engine/life/record.py writes them. Every mood input of an ending activity
is in one list (`mood_inputs`), used by the transition and by the forecast of what comes next (`preview_next`),
which runs this same transition on the forecast state: without a chat in between the preview is what happens.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import replace
from typing import Any

from engine import energy as energy_model
from engine import feelings as feel
from engine import mood as mood_model
from engine.life import cast as cast_model
from engine.life import household as house_model
from engine.life import illness
from engine.life.catalogue import ActivitySpec, catalogue
from engine.life.choose import RAIN, Choice, Situation, choose
from engine.life.effects import CloseSuspended, Effect, EndActivity, LifeEvent, MoodPush, StartActivity
from engine.life.fallback import abandoned_text, completion_text, details_for, resumed_text
from engine.life.localtime import HOUR, MINUTE, day_of, local_time, rng_for
from engine.life.narrate import StoryState, deadline_near, narrate, tail_of
from engine.life.plan import DayPlan, make_plan, next_anchor
from engine.life.scene import Companion, Moment, Outcome, Scene
from engine.life.state import LifeContext, LifeState, energy_params, world_of
from engine.life.story import away_ids
from engine.life.week import cause_feelings, leave_by, role_causes, shape_of
from engine.life.world import WorldDay

__all__ = [
    "advance", "close_for_gap", "energy_level", "fresh_state", "mood_inputs", "preview_next", "replan_from",
    "transition", "wake_for",
]

MIN_SLEEP_H, MAX_SLEEP_H = 6.0, 10.0
LIE_IN_MIN = (20.0, 90.0)   # how much longer she sleeps on a morning with no alarm, minutes
SHORTEST_NIGHT_H = 3.0   # an alarm after a late night may cut her sleep below MIN_SLEEP_H, never below this
FATIGUE_PUSH = 0.05      # valence push per unit of energy above (+) or below (-) 0.4 when an activity ends
# A disappointment (rain on the walk, a friend cancels, the bread fails) replaces the activity's own push: a
# small loss, which mood.push weighs by her loss aversion.
DISAPPOINTED_PUSH = (-0.05, 0.02, -0.03)
RAIN_DISAPPOINT = 0.5    # extra chance an outdoor kind goes wrong when it rains
HOME_PLACES = ("家", "阳台")   # her own fridge; at her parents' it is theirs
# Issue 24: a feeling this strong, of these kinds, keeps her awake a while at bedtime (once a night): she lies
# awake (daydream, why "unsettled") before she sleeps, so bad news costs her sleep as it does people.
UNSETTLED_FEELINGS = ("sad", "worried", "tender", "wronged")
UNSETTLED_AT = 0.45
LIE_AWAKE_MIN = (30, 70)   # how long she lies awake, minutes (a 5-minute grid)
# Which band her words take (engine/life/narrate.py): a named feeling this strong decides it; else her valence
# this far from her baseline does.
FEELING_BAND_AT = 0.3
VALENCE_BAND_DEV = 0.13
# A feeling is named in her words while it is strong, or for a while after what raised it (the glow of a call is
# said about the call and the hour after, not about every sentence of the evening). After the sentence about the
# call itself, only if that raise left it strong enough to decide her band: half an hour short of her sleep (tired
# 0.09) is not 因为没睡好，整个人都是疲的 at breakfast.
NAMED_AT = 0.45
NAMED_FOR_S = 90 * MINUTE
# Her dinner anchors (the plan's keys): once one is done, her words give her no second dinner (issue 24).
DINNER_KEYS = ("dinner", "nianyefan")


BEDTIME_SCROLL = 0.35       # share of nights she takes her phone to bed first
SCROLL_LONG = 0.35          # ... and of those, how often it runs far longer than meant
SCROLL_MIN = (40, 50, 60, 75, 90)
COOKED_WITHIN_S = 3 * HOUR   # a dish cooked this long before dinner is that dinner


def _cooked_before(state: LifeState, meal_at: float) -> bool:
    cooked = state.plan.get("cooked_at") if state.plan is not None else None
    return cooked is not None and 0 <= meal_at - float(cooked) <= COOKED_WITHIN_S


def _dined(state: LifeState) -> bool:
    return state.plan is not None and any(k in state.plan.get("done", ()) for k in DINNER_KEYS)


def _world(ctx: LifeContext, state: LifeState, day: str) -> WorldDay:
    return world_of(dt.date.fromisoformat(day), ctx.city, state.seed_key)


def fresh_state(ctx: LifeContext, seed_key: str, now: float) -> LifeState:
    ep = energy_params(ctx.settings, ctx.persona, now)
    return LifeState(mood=mood_model.at_baseline(now), energy=energy_model.spin_up(now, ep), plan=None,
                     last_step_at=now, seed_key=seed_key, met=cast_model.first_met(seed_key, now))


# --- continuous parts ----------------------------------------------------------------------------


def advance(ctx: LifeContext, state: LifeState, until: float, spec: ActivitySpec | None) -> LifeState:
    """Mood and energy at `until` in closed form under one activity."""
    asleep = spec.asleep if spec else state.energy.asleep
    rate = spec.rate if spec else 1.0
    ep = energy_params(ctx.settings, ctx.persona, until)
    return state.evolve(mood=mood_model.relax(state.mood, until, ctx.mp),
                   energy=energy_model.step(state.energy, until, ep, asleep=asleep, rate=rate))


def energy_level(ctx: LifeContext, state: LifeState, t: float | None = None) -> float:
    return energy_model.level(state.energy, energy_params(ctx.settings, ctx.persona, state.energy.at), t)


def mood_dev(ctx: LifeContext, state: LifeState) -> tuple[float, float]:
    v, a, _ = mood_model.values(state.mood, ctx.mp)
    return v - ctx.mp.baseline[0], a - ctx.mp.baseline[1]


def mood_inputs(spec: ActivitySpec, outcome: Outcome, level: float) -> list[MoodPush]:
    """Every push an ending activity gives her mood: what it was (or how it disappointed), and how tired she is."""
    inputs = [MoodPush("disappointed" if outcome is Outcome.DISAPPOINTED else "activity",
                       DISAPPOINTED_PUSH if outcome is Outcome.DISAPPOINTED else spec.mood)]
    if not spec.asleep:
        fatigue = FATIGUE_PUSH * (level - 0.4)
        inputs.append(MoodPush("fatigue", (fatigue, 0.0, 0.5 * fatigue)))
    return inputs


def _push_all(ctx: LifeContext, mood: mood_model.Mood, inputs: list[MoodPush]) -> mood_model.Mood:
    for push in inputs:
        mood = mood_model.push(mood, push.delta, ctx.mp)
    return mood


# --- the transition ------------------------------------------------------------------------------


def transition(ctx: LifeContext, state: LifeState, cur: dict[str, Any], at: float,
               suspended: list[dict[str, Any]], *, mood_on: bool = True,
               preview: bool = False) -> tuple[LifeState, list[Effect]]:
    """`cur` ends at `at` (mood and energy already advanced to `at`): finish it and start what comes next."""
    effects: list[Effect] = []
    kind = cur["kind"]
    if kind == "chat":
        effects.append(EndActivity(cur["id"], "done", at, cur["detail"]))
        state, more = _after_chat(ctx, state, at, suspended, mood_on, preview)
        started = more[-1]
        if mood_on and isinstance(started, StartActivity):
            state = retarget(ctx, state, at, started.kind)
        return state, effects + more
    state, done = _finish(ctx, state, cur, at, mood_on, preview)
    effects += done
    if kind == "sleep":
        state = _wake_up(ctx, state, at, (at - float(cur["started_at"])) / HOUR, mood_on)
    if state.plan is None:
        state, start = replan_from(ctx, state, at, mood_on)
    else:
        state, start = _choose_and_start(ctx, state, at, kind, mood_on, preview)
    if mood_on:
        state = retarget(ctx, state, at, start.kind)
    return state, [*effects, start]


def replan_from(ctx: LifeContext, state: LifeState, t: float, mood_on: bool = True) -> tuple[LifeState, StartActivity]:
    """Pick the day up at t: asleep by her rhythm -> sleep until the predicted wake, else plan the rest of the day."""
    if state.energy.asleep:
        ep = energy_params(ctx.settings, ctx.persona, t)
        wake = energy_model.crossing(state.energy.s, t, ep, asleep=True)
        wake = min(max(wake, t + 30 * MINUTE), t + MAX_SLEEP_H * HOUR)
        plan: DayPlan = {"day": day_of(t, ctx.tz), "shape": "off", "wake_at": None, "sleep_at": t, "anchors": [],
                "done": [], "naps": 0, "nap": False, "counts": {}}
        state = state.evolve(plan=plan)
        return state, _start(ctx, state, "sleep", t, wake, "routine", {}, mood_on, preview=True)
    state = _new_plan(ctx, state, t, woke_at=None)
    return _choose_and_start(ctx, state, t, None, mood_on, preview=False)


def _wake_up(ctx: LifeContext, state: LifeState, at: float, slept_h: float, mood_on: bool) -> LifeState:
    """She wakes from her main sleep at `at`: a new household day, the day's own tone, a new plan.

    The tone (engine.mood.waking_tone: a seeded day-to-day drift plus the cost of a short night) is what
    gives her bad days of her own; the mood layer drifts to it over hours, so waking is never a jump.
    """
    slept = round(slept_h, 3)
    state = state.evolve(house=house_model.new_day(state.house), slept_h=slept)
    if mood_on:
        date = dt.date.fromisoformat(day_of(at, ctx.tz))
        cold = illness.cold_on(state.seed_key, date)
        tone = mood_model.waking_tone(state.seed_key, date, slept, ctx.mp) - illness.tone_cost(cold)
        raises = feel.waking_raises(slept, ctx.mp.sleep_need_h)
        sick = illness.tired_raise(cold)
        if sick is not None:   # a cold: tired for a cause she names (issue 24 item 5)
            raises = [*raises, ([("tired", sick[0])], sick[1])]
        state = state.evolve(day_tone=tone, feelings=tuple(feel.apply_raises(feel.rested(state.feelings), raises, at)))
        state = retarget(ctx, state, at, "sleep")
    return _new_plan(ctx, state, at, woke_at=at)


def retarget(ctx: LifeContext, state: LifeState, at: float, kind: str | None) -> LifeState:
    """Point her mood layer at the day's tone plus her feelings (valence) and at what she is doing plus her
    feelings (arousal, dominance): engine.mood.set_targets, constant until the next transition (issue 24)."""
    pv, pa, pd = feel.pad_pull(state.feelings, at)
    spec = catalogue().get(kind) if kind else None
    ta, td = feel.activity_tone(spec.category) if spec else (0.0, 0.0)
    return state.evolve(mood=mood_model.set_targets(state.mood, state.day_tone + pv, ta + pa, td + pd))


def _lie_awake_s(rng: Any) -> float:
    lo, hi = LIE_AWAKE_MIN
    return (lo + 5 * rng.randint(0, (hi - lo) // 5)) * MINUTE


def unsettled(state: LifeState, at: float) -> bool:
    """A strong sad or anxious feeling that keeps her awake at bedtime."""
    top = feel.current(state.feelings, at)
    return any(f["name"] in UNSETTLED_FEELINGS and f["i"] >= UNSETTLED_AT for f in top)


def _new_plan(ctx: LifeContext, state: LifeState, t: float, woke_at: float | None) -> LifeState:
    day = day_of(t, ctx.tz)
    world = _world(ctx, state, day)
    tomorrow = _world(ctx, state, (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat())
    plan = make_plan(state.seed_key, t, day, state.energy, energy_params(ctx.settings, ctx.persona, t), ctx.persona,
                     ctx.tz, role=ctx.role, world=world, tomorrow=tomorrow, woke_at=woke_at,
                     half_width_h=ctx.settings.life.sleep_window_h, mood_dev=mood_dev(ctx, state),
                     slept_h=state.slept_h, crunch=deadline_near(state.story, state.seed_key),
                     sick=illness.stage(illness.cold_on(state.seed_key, dt.date.fromisoformat(day))))
    return state.evolve(plan=plan)


def _situation(ctx: LifeContext, state: LifeState, t: float, previous: str | None,
               sleep_end: float | None = None) -> Situation:
    assert state.plan is not None
    day = state.plan["day"]
    needs = house_model.needs(state.house, day)
    if house_model.eats_out(state.house):
        needs = needs | {"eat_out"}
    known = [x for x in (state.last_chat_at, state.last_social_at) if x is not None]
    return Situation(
        seed_key=state.seed_key, t=t, plan=state.plan, persona=ctx.persona, world=_world(ctx, state, day),
        energy=energy_level(ctx, state, t), mood_dev=mood_dev(ctx, state), last_social_at=max(known) if known else None,
        previous=previous, tz=ctx.tz, tired_energy=ctx.settings.life.tired_energy,
        lonely_after_h=ctx.settings.life.lonely_after_h, needs=needs,
        friends_due=tuple(m for m, _ in cast_model.overdue(state.met, t, lives="same_city", seed_key=state.seed_key,
                                                           away=away_ids(state.story))),
        family_due=tuple(m for m, _ in cast_model.overdue(state.met, t, lives="hometown", seed_key=state.seed_key,
                                                          away=away_ids(state.story))), sleep_end=sleep_end)


def wake_for(ctx: LifeContext, state: LifeState, t: float) -> float:
    """When she wakes from a night's sleep starting at t: process S, or the alarm of a working morning."""
    ep = energy_params(ctx.settings, ctx.persona, t)
    wake = energy_model.crossing(state.energy.s, t, ep, asleep=True)
    wake = min(max(wake, t + MIN_SLEEP_H * HOUR), t + MAX_SLEEP_H * HOUR)
    wake_day = day_of(wake, ctx.tz)   # the morning she wakes into (her day turns at 04:00)
    if shape_of(_world(ctx, state, wake_day), state.seed_key) == "work":
        alarm = leave_by(ctx.role, wake_day, ctx.tz, state.seed_key)
        if alarm is not None and alarm < wake:
            wake = max(alarm, t + SHORTEST_NIGHT_H * HOUR)
    else:
        # no alarm on a day off: she lies in a while (issue 24 item 5: she slept less before days off)
        lie_in = rng_for(state.seed_key, wake_day, "lie_in").uniform(*LIE_IN_MIN) * MINUTE
        wake = min(wake + lie_in, t + MAX_SLEEP_H * HOUR)
    return wake


def _choose_and_start(ctx: LifeContext, state: LifeState, t: float, previous: str | None, mood_on: bool,
                      preview: bool) -> tuple[LifeState, StartActivity]:
    assert state.plan is not None
    anchor = next_anchor(state.plan, t)
    sleep_end = wake_for(ctx, state, t) if anchor.kind == "sleep" and anchor.at <= t + 60 else None
    plan = dict(state.plan)
    if sleep_end is not None and not plan.get("lay_awake") and mood_on and unsettled(state, t):
        rng = rng_for(state.seed_key, plan["day"], "unsettled", round(t, 3))
        choice = Choice("daydream", "unsettled", t + _lie_awake_s(rng), place="家")
        plan["lay_awake"] = True
    elif sleep_end is not None and not plan.get("scrolled") and not plan.get("lay_awake"):
        # in bed with her phone first, now and then far longer than she meant (issue 24 item 5: 短视频)
        plan["scrolled"] = True
        rng = rng_for(state.seed_key, plan["day"], "scroll")
        if rng.random() < BEDTIME_SCROLL:
            minutes = rng.choice(SCROLL_MIN) if rng.random() < SCROLL_LONG else rng.randint(10, 25)
            choice = Choice("phone", "relax", t + minutes * MINUTE, place="床上")
        else:
            choice = choose(_situation(ctx, state, t, previous, sleep_end))
    else:
        choice = choose(_situation(ctx, state, t, previous, sleep_end))
    if choice.anchor is not None and choice.anchor != "sleep":
        plan["done"] = [*plan["done"], choice.anchor]
    if choice.kind == "nap":
        plan["naps"] = int(plan["naps"]) + 1
    counts = dict(plan.get("counts", {}))
    counts[choice.kind] = int(counts.get(choice.kind, 0)) + 1
    plan["counts"] = dict(sorted(counts.items()))
    state = state.evolve(plan=plan)
    extra = {"outcome": _outcome(ctx, state, choice, t).value, "place": choice.place, "with": choice.with_id}
    if choice.anchor:
        extra["anchor"] = choice.anchor
    return state, _start(ctx, state, choice.kind, t, max(choice.end, t + 60.0), choice.why, extra, mood_on, preview)


def _outcome(ctx: LifeContext, state: LifeState, choice: Choice, t: float) -> Outcome:
    """Seeded: outdoors in the rain often disappoints; some kinds sometimes do anyway (a friend cancels)."""
    spec = catalogue()[choice.kind]
    chance = spec.disappoint
    if spec.outdoor and state.plan is not None and _world(ctx, state, state.plan["day"]).weather in RAIN:
        chance += RAIN_DISAPPOINT
    if chance <= 0:
        return Outcome.DONE
    return Outcome.DISAPPOINTED if rng_for(state.seed_key, "outcome", round(t, 3)).random() < chance else Outcome.DONE


def _start(ctx: LifeContext, state: LifeState, kind: str, t: float, end: float, why: str, extra: dict[str, Any],
           mood_on: bool, preview: bool, details: dict[str, str] | None = None) -> StartActivity:
    spec = catalogue()[kind]
    detail: dict[str, Any] = {"details": details if details is not None else details_for(state.seed_key, kind, t)}
    detail.update({k: v for k, v in extra.items() if v is not None})
    end = round(end, 3)
    start = StartActivity(kind, spec.label, t, end, why, None, detail)
    if preview or kind in ("chat", "sleep") or not ctx.forecast_next:
        return start
    return replace(start, next_kind=preview_next(ctx, state, start, mood_on))


def preview_next(ctx: LifeContext, state: LifeState, start: StartActivity, mood_on: bool = True) -> str | None:
    """What she will do after `start`: the same transition, run on her state forecast for its end.

    Mood and energy are closed-form and every mood input is in `mood_inputs`, so without a chat in between the
    forecast is exact and the preview is what actually happens next.
    """
    if state.plan is None:
        return None
    spec = catalogue()[start.kind]
    at = start.expected_end
    if mood_on:   # the transition that starts it points her mood at it (retarget) right after this preview
        state = retarget(ctx, state, start.started_at, start.kind)
    forecast = advance(ctx, state, at, spec) if mood_on else state
    cur = {"id": -1, "kind": start.kind, "started_at": start.started_at, "expected_end": at, "detail": start.detail}
    _, effects = transition(ctx, forecast, cur, at, [], mood_on=mood_on, preview=True)
    return next((e.kind for e in effects if isinstance(e, StartActivity)), None)


def _finish(ctx: LifeContext, state: LifeState, cur: dict[str, Any], at: float, mood_on: bool,
            preview: bool) -> tuple[LifeState, list[Effect]]:
    """Complete `cur` at `at`: life event (told=0), household and cast bookkeeping, mood pushes."""
    kind = cur["kind"]
    spec = catalogue()[kind]
    detail = cur["detail"]
    outcome = Outcome(detail.get("outcome", "done"))
    effects: list[Effect] = [EndActivity(cur["id"], "done", at, detail)]
    if mood_on:   # what it raised colours its own sentence (issue 24)
        raises = feel.activity_raises(state.seed_key, kind, outcome.value, energy_level(ctx, state, at), at,
                                      role_causes=role_causes(ctx.role), cause_feelings=cause_feelings(ctx.role))
        if raises:
            state = state.evolve(feelings=tuple(feel.apply_raises(state.feelings, raises, at)))
    if not preview:
        text, story = _sentence(ctx, state, cur, at, Moment.COMPLETED, outcome)
        state = state.evolve(story=story, last_tail=tail_of(text) or state.last_tail)
        text = text or completion_text(kind, detail.get("details", {}), outcome is Outcome.DISAPPOINTED)
        if text:
            effects.append(LifeEvent(text, at, "completed", cur["id"]))
    if spec.category == "social" or kind == "festival":
        state = state.evolve(last_social_at=at)
    if kind == "cook" and outcome is Outcome.DONE and state.plan is not None and not _dined(state):
        state = state.evolve(plan={**state.plan, "cooked_at": round(at, 3)})
    who = detail.get("with")
    member = cast_model.cast_of(state.seed_key).get(who) if who else None
    # Seeing someone counts for everyone; a call counts only for those far away (a call is not a meeting).
    far = member is not None and cast_model.lives_of(member, away_ids(state.story)) == "hometown"
    if member and outcome is Outcome.DONE and (kind != "call_friend" or far):
        state = state.evolve(met={**state.met, member.id: round(at, 3)})
    day = state.plan["day"] if state.plan else day_of(at, ctx.tz)
    place = detail.get("place") or spec.place
    state = state.evolve(house=house_model.after(state.house, kind, day, at_home=place in HOME_PLACES))
    if mood_on:
        inputs = mood_inputs(spec, outcome, energy_level(ctx, state, at))
        state = state.evolve(mood=_push_all(ctx, state.mood, inputs))
        effects += inputs
    return state, effects


def _sentence(ctx: LifeContext, state: LifeState, cur: dict[str, Any], at: float, moment: Moment,
              outcome: Outcome, remaining_s: float = 0.0) -> tuple[str | None, dict[str, Any]]:
    """The narrated sentence for this activity, and the story state after it (None: use the fallback)."""
    ended = local_time(at, ctx.tz)
    who = cur["detail"].get("with")
    member = cast_model.cast_of(state.seed_key).get(who) if who else None
    scene = Scene(kind=cur["kind"], moment=moment, started=local_time(float(cur["started_at"]), ctx.tz), ended=ended,
                  world=world_of(ended.date(), ctx.city, state.seed_key), outcome=outcome,
                  with_whom=Companion(member.id, member.name, member.relation) if member else None,
                  place=cur["detail"].get("place"), valence=mood_model.values(state.mood, ctx.mp)[0],
                  remaining_s=remaining_s, dined=cur["kind"] not in DINNER_KEYS and _dined(state),
                  cooked=cur["kind"] == "dinner" and _cooked_before(state, float(cur["started_at"])),
                  sick=illness.stage(illness.cold_on(state.seed_key, dt.date.fromisoformat(day_of(at, ctx.tz)))),
                  skipped=bool(state.plan and state.plan.get("skipped_breakfast")
                               and cur["detail"].get("anchor") == "commute_am"),
                  anchor=cur["detail"].get("anchor"), role=ctx.role.name,
                  **_felt(ctx, state, at, outcome))
    text, story = narrate(scene, StoryState.adopt(state.story), state.seed_key, state.last_tail)
    return text, story.data


def _felt(ctx: LifeContext, state: LifeState, at: float, outcome: Outcome) -> dict[str, Any]:
    """The Scene's feeling fields: her strongest feeling and its cause, and the band her words take."""
    top = feel.strongest(state.feelings, at)
    dev = mood_model.values(state.mood, ctx.mp)[0] - ctx.mp.baseline[0]
    mood_band = "neg" if dev <= -VALENCE_BAND_DEV else "pos" if dev >= VALENCE_BAND_DEV else "flat"
    if outcome is Outcome.DISAPPOINTED:
        band = "neg"
    elif top is not None and top["i"] >= FEELING_BAND_AT:
        band = "pos" if feel.sign_of(top["name"]) == "pos" else "neg"
        if mood_band != "flat" and band != mood_band:
            band = "flat"   # a feeling against a clearly other mood: neither wins her words (no 失落 on a glad day)
    else:
        band = mood_band
    tab = feel.table()
    if top is None:
        return {"band": band}
    just_raised = at - top["since"] <= 1.0   # the sentence about what raised it
    if not (top["i"] >= NAMED_AT or just_raised
            or (at - top["since"] <= NAMED_FOR_S and feel.raised_to(top) >= FEELING_BAND_AT)):
        return {"band": band}
    told = str(top["cause"]).startswith("你")
    if not told and feel.sign_of(top["name"]) == "pos" and not just_raised:
        return {"band": band}   # the glow of a run is said about the run, not about the shower after it
    sign = "pos" if feel.sign_of(top["name"]) == "pos" else "neg"
    if band != "flat" and sign != band:
        return {"band": band}   # a faint glad feeling on a low day: the band's own words, not a contradiction
    cause = "" if top["cause"] in tab.quiet_causes else str(top["cause"])
    return {"band": band, "feeling": top["name"], "feeling_cause": cause}


def _after_chat(ctx: LifeContext, state: LifeState, at: float, suspended: list[dict[str, Any]], mood_on: bool,
                preview: bool) -> tuple[LifeState, list[Effect]]:
    """The chat went quiet: resume what she was doing with its remaining time, or give it up."""
    effects: list[Effect] = []
    for susp in suspended:
        detail = {**susp["detail"], "open": False}
        details = detail.get("details", {})
        remaining = float(susp["remaining_s"] or 0.0)
        kind = susp["kind"]
        sleep_at = state.plan["sleep_at"] if state.plan else math.inf
        if kind == "sleep":
            new_end = float(susp["expected_end"])
            resumable = new_end - at >= 30 * MINUTE
            if resumable and mood_on and state.plan is not None and not state.plan.get("lay_awake") \
                    and unsettled(state, at):
                # woken by bad news: she lies awake a while; the plan's sleep anchor puts her back to bed after
                effects.append(CloseSuspended(susp["id"], "abandoned", {**detail, "abandoned_at": at}))
                rng = rng_for(state.seed_key, state.plan["day"], "unsettled", round(at, 3))
                plan = {**state.plan, "lay_awake": True}
                state = state.evolve(plan=plan)
                end = at + _lie_awake_s(rng)
                return state, [*effects, _start(ctx, state, "daydream", at, end, "unsettled", {"place": "家"},
                                                mood_on, preview)]
        else:
            new_end = at + remaining
            resumable = (new_end <= float(susp["expected_end"]) + ctx.settings.life.resume_window_s
                         and new_end <= sleep_at and remaining >= 60.0)
        outcome = Outcome(detail.get("outcome", "done"))
        if resumable:
            effects.append(CloseSuspended(susp["id"], "suspended", {**detail, "resumed_at": at}))
            text, story = _sentence(ctx, state, susp, at, Moment.RESUMED, outcome, new_end - at)
            state = state.evolve(story=story, last_tail=tail_of(text) or state.last_tail)
            effects.append(LifeEvent(text or resumed_text(kind, details, new_end - at), at, "resumed", susp["id"]))
            extra = {k: detail.get(k) for k in ("outcome", "place", "with", "anchor")}
            extra["resumed_from"] = susp["id"]
            return state, [*effects, _start(ctx, state, kind, at, new_end, "resume", extra, mood_on, preview,
                                            details=details)]
        effects.append(CloseSuspended(susp["id"], "abandoned", {**detail, "abandoned_at": at}))
        text, story = _sentence(ctx, state, susp, at, Moment.ABANDONED, outcome)
        state = state.evolve(story=story, last_tail=tail_of(text) or state.last_tail)
        effects.append(LifeEvent(text or abandoned_text(kind, details), at, "abandoned", susp["id"]))
        if kind == "sleep":
            started = float(susp["started_at"])
            state = _wake_up(ctx, state, at, (float(susp.get("ended_at") or at) - started) / HOUR, mood_on)
        break
    if state.plan is None:
        state, start = replan_from(ctx, state, at, mood_on)
    else:
        state, start = _choose_and_start(ctx, state, at, "chat", mood_on, preview)
    return state, [*effects, start]


def close_for_gap(cur: dict[str, Any] | None, suspended: list[dict[str, Any]], at: float,
                  last_step_at: float) -> list[Effect]:
    """Downtime: nothing is invented; what she was doing simply stops when the daemon stopped."""
    effects: list[Effect] = []
    if cur is not None:
        effects.append(EndActivity(cur["id"], "abandoned", min(at, max(cur["started_at"], last_step_at)),
                                   {**cur["detail"], "ended_by": "gap"}))
    for susp in suspended:
        effects.append(CloseSuspended(susp["id"], "abandoned", {**susp["detail"], "open": False, "ended_by": "gap"}))
    return effects

