"""Her day's working state: mood, energy and plan loaded from `mood_state`, stepped in memory, saved once.

The machinery behind engine.inner: `DayState` carries one step's state (mood, energy, day plan,
current activity) through activity transitions, life events and trace points, using the equations
of engine.mood, engine.energy and engine.activity. engine.inner is the public face over it.
"""

from __future__ import annotations

import math
from typing import Any

from engine import activity as act
from engine import energy as energy_model
from engine import mood as mood_model
from engine.persona import Persona
from engine.settings import Settings
from engine.store import life as store
from engine.store.core import get_companion

STATE_VERSION = 1
MAX_TRANSITIONS_PER_STEP = 500     # a guard: a day has ~20 transitions; a runaway loop must not hang her
PRUNE_EVERY_S = 3600.0
MIN_SLEEP_H, MAX_SLEEP_H = 6.0, 10.0
FATIGUE_PUSH = 0.05     # valence push per unit of energy above (+) or below (-) 0.4 when an activity ends


# --- parameters from settings + persona ---------------------------------------------------------


def mood_params(settings: Settings, persona: Persona | None) -> mood_model.MoodParams:
    p = persona or Persona(loss_aversion=settings.mood.loss_aversion)
    m = settings.mood
    return mood_model.MoodParams(
        baseline=(p.baseline_v, p.baseline_a, p.baseline_d),
        half_life_h=(m.half_life_v_h * p.half_life_factor_v, m.half_life_a_h * p.half_life_factor_a,
                     m.half_life_d_h * p.half_life_factor_d),
        negative_half_life_factor=m.negative_half_life_factor,
        loss_aversion=p.loss_aversion,
    )


def energy_params(settings: Settings, persona: Persona | None, t: float) -> energy_model.EnergyParams:
    offset = act.local_time(t, settings.life.tz).utcoffset()
    return energy_model.EnergyParams(
        rise_tau_h=settings.energy.rise_tau_h, fall_tau_h=settings.energy.fall_tau_h,
        chronotype_shift_h=(persona.chronotype_shift_h if persona else 0.0),
        utc_offset_h=offset.total_seconds() / 3600.0 if offset else 0.0,
    )


def _seed_key(conn: Any) -> str:
    companion = get_companion(conn)
    if companion is None:
        return "anima"
    return f"{companion['name']}|{companion['birth_utc']}"


# --- state ---------------------------------------------------------------------------------------


class DayState:
    """One step's working state: loaded once, changed in memory, saved once."""

    def __init__(self, conn: Any, settings: Settings, persona: Persona | None, raw: dict[str, Any]):
        self.conn, self.settings, self.persona = conn, settings, persona or Persona()
        self.mp = mood_params(settings, persona)
        self.mood = mood_model.Mood.from_dict(raw["mood"])
        self.energy = energy_model.Energy.from_dict(raw["energy"])
        self.plan: dict[str, Any] | None = raw.get("plan")
        self.last_step_at: float = raw["last_step_at"]
        self.last_trace_at: float = raw.get("last_trace_at", -math.inf) or -math.inf
        self.last_prune_at: float = raw.get("last_prune_at", -math.inf) or -math.inf
        self.last_chat_at: float | None = raw.get("last_chat_at")
        self.last_social_at: float | None = raw.get("last_social_at")
        self.life_paused: bool = bool(raw.get("life_paused", False))
        self.seed_key: str = raw.get("seed_key") or _seed_key(conn)
        self.events: list[int] = []
        self.mood_on = True   # control 'heartbeat': off freezes mood and energy, activity effects included

    def to_dict(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "mood": self.mood.to_dict(), "energy": self.energy.to_dict(),
                "plan": self.plan, "last_step_at": self.last_step_at,
                "last_trace_at": None if self.last_trace_at == -math.inf else self.last_trace_at,
                "last_prune_at": None if self.last_prune_at == -math.inf else self.last_prune_at,
                "last_chat_at": self.last_chat_at, "last_social_at": self.last_social_at,
                "life_paused": self.life_paused, "seed_key": self.seed_key}

    def ep(self, t: float) -> energy_model.EnergyParams:
        return energy_params(self.settings, self.persona, t)

    def save(self, now: float) -> None:
        store.put_inner_state(self.conn, self.to_dict(), now)

    # -- continuous parts --

    def advance(self, until: float, spec: act.ActivitySpec | None) -> None:
        """Step mood and energy to `until` in closed form under one activity."""
        self.mood = mood_model.relax(self.mood, until, self.mp)
        asleep = spec.asleep if spec else self.energy.asleep
        rate = spec.rate if spec else 1.0
        self.energy = energy_model.step(self.energy, until, self.ep(until), asleep=asleep, rate=rate)

    def energy_level(self, t: float | None = None) -> float:
        return energy_model.level(self.energy, self.ep(self.energy.at), t)

    def values(self) -> tuple[float, float, float]:
        return mood_model.values(self.mood, self.mp)

    def trace(self, now: float, kind: str | None) -> None:
        interval = self.settings.life.trace_interval_s
        bucket = math.floor(now / interval) * interval
        if bucket <= self.last_trace_at:
            return
        v, a, d = self.values()
        store.put_trace_point(self.conn, bucket, round(v, 6), round(a, 6), round(d, 6),
                              round(self.energy_level(), 6), kind)
        self.last_trace_at = bucket
        if now - self.last_prune_at >= PRUNE_EVERY_S:
            store.prune_trace(self.conn, now - self.settings.life.trace_retention_days * 86400.0)
            self.last_prune_at = now

    # -- activities --

    def start(self, kind: str, t: float, end: float, why: str, extra: dict[str, Any] | None = None,
              details: dict[str, str] | None = None) -> dict[str, Any]:
        spec = act.catalogue()[kind]
        detail = {"details": details if details is not None else act.details_for(self.seed_key, kind, t)}
        detail.update(extra or {})
        next_kind = self.preview_next(spec, end) if kind not in ("chat", "sleep") else None
        activity_id = store.start_activity(self.conn, kind=kind, label=spec.label, started_at=t,
                                           expected_end=round(end, 3), why=why, next_kind=next_kind, detail=detail)
        return {"id": activity_id, "kind": kind, "label": spec.label, "started_at": t,
                "expected_end": round(end, 3), "why": why, "next_kind": next_kind, "detail": detail}

    def preview_next(self, spec: act.ActivitySpec, end: float) -> str | None:
        """What she will do after this one: the same seeded choice, made on her state forecast for `end`.

        Mood and energy are closed-form, so without a chat in between the forecast is exact and
        the preview is what actually happens next.
        """
        if self.plan is None:
            return None
        energy = energy_model.step(self.energy, end, self.ep(end), asleep=spec.asleep, rate=spec.rate)
        level = energy_model.level(energy, self.ep(end))
        mood = mood_model.relax(self.mood, end, self.mp)
        if self.mood_on:
            mood = mood_model.push(mood, self._completion_push(spec, level), self.mp)
        choice = act.choose(self.seed_key, end, self.plan, self.persona, energy=level,
                            valence=mood_model.values(mood, self.mp)[0], last_social_at=self._last_social(end, spec),
                            previous=spec.kind, tz=self.settings.life.tz,
                            tired_energy=self.settings.life.tired_energy,
                            lonely_after_h=self.settings.life.lonely_after_h)
        return choice.kind

    def _completion_push(self, spec: act.ActivitySpec, level: float) -> tuple[float, float, float]:
        # What she did colours her mood a little; so does how worn out she is when it ends.
        fatigue = FATIGUE_PUSH * (level - 0.4) if not spec.asleep else 0.0
        return (spec.mood[0] + fatigue, spec.mood[1], spec.mood[2] + 0.5 * fatigue)

    def choose_and_start(self, t: float, previous: str | None) -> dict[str, Any]:
        assert self.plan is not None
        level = self.energy_level(t)
        anchor, anchor_at = act.next_anchor(self.plan, t)
        # The wake forecast walks process S forward (~1 ms); only bedtime needs it.
        sleep_end = self.predicted_wake(t) if anchor == "sleep" and anchor_at <= t + 60 else None
        choice = act.choose(self.seed_key, t, self.plan, self.persona, energy=level, valence=self.values()[0],
                            last_social_at=self._last_social(), previous=previous, tz=self.settings.life.tz,
                            tired_energy=self.settings.life.tired_energy,
                            lonely_after_h=self.settings.life.lonely_after_h, sleep_end=sleep_end)
        if choice.kind in act.MEALS:
            self.plan["done"] = [*self.plan["done"], choice.kind]
        if choice.kind == "nap":
            self.plan["naps"] = int(self.plan["naps"]) + 1
        counts = dict(self.plan.get("counts", {}))
        counts[choice.kind] = int(counts.get(choice.kind, 0)) + 1
        self.plan["counts"] = dict(sorted(counts.items()))
        return self.start(choice.kind, t, max(choice.end, t + 60.0), choice.why)

    def _last_social(self, end: float | None = None, spec: act.ActivitySpec | None = None) -> float | None:
        known = [t for t in (self.last_chat_at, self.last_social_at) if t is not None]
        if spec is not None and spec.category == "social" and end is not None:
            known.append(end)
        return max(known) if known else None

    def predicted_wake(self, t: float) -> float:
        ep = self.ep(t)
        wake = energy_model.crossing(self.energy.s, t, ep, asleep=True)
        return min(max(wake, t + MIN_SLEEP_H * 3600.0), t + MAX_SLEEP_H * 3600.0)

    def new_plan(self, t: float, woke_at: float | None) -> None:
        self.plan = act.make_day_plan(self.seed_key, t, self.energy, self.ep(t), self.persona, self.settings.life.tz,
                                      woke_at=woke_at, half_width_h=self.settings.life.sleep_window_h)

    def replan_from(self, t: float) -> dict[str, Any]:
        """Pick the day up at t: asleep by her rhythm -> sleep until the predicted wake, else plan the rest of the day."""
        if self.energy.asleep:
            ep = self.ep(t)
            wake = energy_model.crossing(self.energy.s, t, ep, asleep=True)
            wake = min(max(wake, t + 30 * 60.0), t + MAX_SLEEP_H * 3600.0)
            self.plan = {"day": act.day_of(t, self.settings.life.tz), "wake_at": None, "sleep_at": t,
                         "meals": {}, "done": [], "naps": 0}
            return self.start("sleep", t, wake, "routine")
        self.new_plan(t, woke_at=None)
        return self.choose_and_start(t, None)

    def finish(self, cur: dict[str, Any], at: float) -> None:
        """Complete the current activity at `at`: life event (told=0), mood push, bookkeeping."""
        kind = cur["kind"]
        spec = act.catalogue()[kind]
        store.end_activity(self.conn, cur["id"], "done", at, cur["detail"])
        text = act.completion_text(kind, cur["detail"].get("details", {}))
        if text:
            self.events.append(store.add_life_event(self.conn, text, at, told=False, origin="life",
                                                    kind="completed", activity_id=cur["id"]))
        if spec.category == "social":
            self.last_social_at = at
        if not self.mood_on:
            return
        self.mood = mood_model.push(self.mood, self._completion_push(spec, self.energy_level(at)), self.mp)

    def after(self, cur: dict[str, Any], at: float) -> dict[str, Any]:
        """What starts when `cur` ends at `at`."""
        kind = cur["kind"]
        if kind == "chat":
            return self.after_chat(at)
        if kind == "sleep":
            self.new_plan(at, woke_at=at)
        if self.plan is None:
            return self.replan_from(at)
        return self.choose_and_start(at, kind)

    def after_chat(self, at: float) -> dict[str, Any]:
        """The chat went quiet: resume what she was doing with its remaining time, or give it up."""
        for susp in store.all_open_suspended(self.conn):
            detail = {**susp["detail"], "open": False}
            details = detail.get("details", {})
            remaining = float(susp["remaining_s"] or 0.0)
            kind = susp["kind"]
            sleep_at = self.plan["sleep_at"] if self.plan else math.inf
            if kind == "sleep":
                new_end = float(susp["expected_end"])
                resumable = new_end - at >= 30 * 60.0
            else:
                new_end = at + remaining
                resumable = (new_end <= float(susp["expected_end"]) + self.settings.life.resume_window_s
                             and new_end <= sleep_at and remaining >= 60.0)
            if resumable:
                store.close_suspended(self.conn, susp["id"], "suspended", {**detail, "resumed_at": at})
                self.events.append(store.add_life_event(
                    self.conn, act.resumed_text(kind, details, new_end - at), at, told=False, origin="life",
                    kind="resumed", activity_id=susp["id"]))
                return self.start(kind, at, new_end, "resume", extra={"resumed_from": susp["id"]}, details=details)
            store.close_suspended(self.conn, susp["id"], "abandoned", {**detail, "abandoned_at": at})
            self.events.append(store.add_life_event(
                self.conn, act.abandoned_text(kind, details), at, told=False, origin="life", kind="abandoned",
                activity_id=susp["id"]))
            if kind == "sleep":
                self.new_plan(at, woke_at=at)
            break
        if self.plan is None:
            return self.replan_from(at)
        return self.choose_and_start(at, "chat")

    def close_for_gap(self, at: float) -> None:
        """Downtime: nothing is invented; what she was doing simply stops when the daemon stopped."""
        cur = store.current_activity(self.conn)
        if cur is not None:
            store.end_activity(self.conn, cur["id"], "abandoned", min(at, max(cur["started_at"], self.last_step_at)),
                               {**cur["detail"], "ended_by": "gap"})
        for susp in store.all_open_suspended(self.conn):
            store.close_suspended(self.conn, susp["id"], "abandoned", {**susp["detail"], "open": False,
                                                                         "ended_by": "gap"})


def load_day(conn: Any, settings: Settings, persona: Persona | None, now: float) -> tuple[DayState, bool]:
    raw = store.get_inner_state(conn)
    if raw is not None and raw.get("version") == STATE_VERSION:
        return DayState(conn, settings, persona, raw), False
    ep = energy_params(settings, persona, now)
    fresh = {"mood": mood_model.at_baseline(now).to_dict(), "energy": energy_model.spin_up(now, ep).to_dict(),
             "plan": None, "last_step_at": now}
    return DayState(conn, settings, persona, fresh), True
