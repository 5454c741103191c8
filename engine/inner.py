"""Her inner state in the database: step mood, energy and activity with elapsed time, and answer how she is.

Sync glue over a connection (the daemon runs it on its DB thread; the simulator and CLI call it
directly). The equations live in engine.mood, engine.energy and engine.activity; this module keeps
their state in `mood_state` (one JSON row), writes activity transitions and life events, and a
bounded `mood_trace`. `inner_snapshot` never contains life-event text.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from engine import activity as act
from engine import energy as energy_model
from engine import mood as mood_model
from engine.appraisal import appraise
from engine.persona import Persona
from engine.settings import Settings
from engine.store import life as store
from engine.store import transaction
from engine.store.core import controls as stored_controls
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


class _Life:
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


def _load(conn: Any, settings: Settings, persona: Persona | None, now: float) -> tuple[_Life, bool]:
    raw = store.get_inner_state(conn)
    if raw is not None and raw.get("version") == STATE_VERSION:
        return _Life(conn, settings, persona, raw), False
    ep = energy_params(settings, persona, now)
    fresh = {"mood": mood_model.at_baseline(now).to_dict(), "energy": energy_model.spin_up(now, ep).to_dict(),
             "plan": None, "last_step_at": now}
    return _Life(conn, settings, persona, fresh), True


# --- public API ----------------------------------------------------------------------------------


def step_inner(conn: Any, settings: Settings, persona: Persona | None, now: float, dt: float,
               controls: dict[str, Any]) -> dict[str, Any]:
    """One heartbeat: step mood/energy (control 'heartbeat') and the activity machine (control 'life') to now.

    Returns {"backwards": bool, "transitions": n, "life_events": n, "activity": kind}. A clock that
    went backwards steps nothing (dt = 0) and re-anchors her time at `now`; the caller logs it.
    """
    heartbeat_on = bool(controls.get("heartbeat", True))
    life_on = bool(controls.get("life", True))
    with transaction(conn):
        life, fresh = _load(conn, settings, persona, now)
        life.mood_on = heartbeat_on
        backwards = now < life.last_step_at
        if backwards:
            life.mood = replace(life.mood, at=now)
            life.energy = replace(life.energy, at=now)
            life.last_step_at = now
            life.last_trace_at = min(life.last_trace_at, now - settings.life.trace_interval_s)
        cur = store.current_activity(conn)
        if life_on and (fresh or cur is None or life.life_paused):
            if cur is not None:
                store.end_activity(conn, cur["id"], "abandoned", now, {**cur["detail"], "ended_by": "life_off"})
            life.life_paused = False
            cur = life.replan_from(now)
        elif not life_on:
            life.life_paused = True
        transitions = 0
        if life_on and cur is not None and not backwards:
            while _ends_by(cur, settings) <= now and transitions < MAX_TRANSITIONS_PER_STEP:
                end = _ends_by(cur, settings)
                if heartbeat_on:
                    life.advance(end, act.catalogue()[cur["kind"]])
                if cur["kind"] == "chat":
                    store.end_activity(conn, cur["id"], "done", end, cur["detail"])
                else:
                    life.finish(cur, end)
                cur = life.after(cur, end)
                transitions += 1
        spec = act.catalogue()[cur["kind"]] if cur else None
        if heartbeat_on:
            life.advance(now, spec)
            life.trace(now, cur["kind"] if cur else None)
        else:  # frozen: time passes, her state does not change
            life.mood = replace(life.mood, at=max(life.mood.at, now))
            life.energy = replace(life.energy, at=max(life.energy.at, now))
        life.last_step_at = now
        life.save(now)
    return {"backwards": backwards, "transitions": transitions, "life_events": len(life.events),
            "activity": cur["kind"] if cur else None}


def _ends_by(cur: dict[str, Any], settings: Settings) -> float:
    if cur["kind"] == "chat":
        last = float(cur["detail"].get("last_chat_at", cur["started_at"]))
        return last + settings.life.quiet_after_chat_s
    return float(cur["expected_end"])


def resume_after_gap(conn: Any, settings: Settings, persona: Persona | None, last_beat_at: float | None,
                     now: float) -> None:
    """Daemon start: one analytic mood step and a free-running energy step over the gap, then re-plan from now.

    No life events are written for the gap: what she was doing ends when the daemon stopped (at her
    last step). A restart within a few heartbeats is not a gap in her day: she carries on.
    `last_beat_at` (the previous daemon's last beat) is informational; her own state records the
    instant it was last stepped, which is what the analytic step starts from.
    """
    with transaction(conn):
        life, fresh = _load(conn, settings, persona, now)
        cur = None if fresh else store.current_activity(conn)
        start = life.last_step_at
        quick = max(60.0, 4.0 * settings.heartbeat.interval_s)
        if cur is not None and 0 <= now - start <= quick and _ends_by(cur, settings) > now:
            life.advance(now, act.catalogue()[cur["kind"]])
        else:
            if not fresh:
                if now > start:
                    life.mood = mood_model.relax(life.mood, now, life.mp)
                    life.energy = energy_model.free_run(life.energy, now, life.ep(start))
                else:  # her clock went backwards while the daemon was down: nothing to step
                    life.mood = replace(life.mood, at=now)
                    life.energy = replace(life.energy, at=now)
                life.close_for_gap(min(start, now))
            cur = life.replan_from(now)
        life.life_paused = False
        life.last_step_at = now
        life.last_trace_at = min(life.last_trace_at, now - settings.life.trace_interval_s)
        life.trace(now, cur["kind"])
        life.save(now)


def interrupt_for_chat(conn: Any, turn_id: str | None, now: float, *, quiet_after_chat_s: float = 600.0) -> None:
    """A chat turn arrived: suspend what she is doing (with its remaining time) and be in the chat."""
    with transaction(conn):
        raw = store.get_inner_state(conn)
        if raw is not None:
            raw["last_chat_at"] = now
            store.put_inner_state(conn, raw, now)
        if not stored_controls(conn).get("life", True):
            return
        cur = store.current_activity(conn)
        if cur is None:
            return
        if cur["kind"] == "chat":
            detail = {**cur["detail"], "last_chat_at": now, "last_turn_id": turn_id,
                      "turns": int(cur["detail"].get("turns", 1)) + 1}
            store.extend_activity(conn, cur["id"], max(float(cur["expected_end"]), now + quiet_after_chat_s), detail)
            return
        remaining = max(0.0, float(cur["expected_end"]) - now)
        store.suspend_activity(conn, cur["id"], now, turn_id, round(remaining, 3), {**cur["detail"], "open": True})
        spec = act.catalogue()["chat"]
        store.start_activity(conn, kind="chat", label=spec.label, started_at=now,
                             expected_end=now + quiet_after_chat_s, why="chat", next_kind=cur["kind"],
                             detail={"last_chat_at": now, "first_turn_id": turn_id, "last_turn_id": turn_id,
                                     "turns": 1})


def appraise_turn(conn: Any, settings: Settings, persona: Persona | None, user_text: str | None,
                  companion_text: str | None, affect: dict[str, Any] | None, now: float) -> dict[str, Any]:
    """Push her mood with one chat turn (control 'appraisal'); return the mood after the push."""
    with transaction(conn):
        life, _ = _load(conn, settings, persona, now)
        if stored_controls(conn).get("appraisal", True):
            push = appraise(user_text, companion_text, affect)
            gain = settings.mood.chat_push_gain
            life.mood = mood_model.relax(life.mood, now, life.mp)
            life.mood = mood_model.push(life.mood, (push[0] * gain, push[1] * gain, push[2] * gain), life.mp)
            life.save(now)
        return _mood_dict(life, now)


def _mood_dict(life: _Life, now: float) -> dict[str, Any]:
    mood = mood_model.relax(life.mood, now, life.mp)
    v, a, d = mood_model.values(mood, life.mp)
    e = energy_model.level(life.energy, life.ep(now), max(now, life.energy.at))
    return {"v": round(v, 4), "a": round(a, 4), "d": round(d, 4), "e": round(e, 4),
            "label": mood_model.label(v, a, d)}


def inner_snapshot(conn: Any, settings: Settings, persona: Persona | None, now: float) -> dict[str, Any]:
    """How she is right now: mood (numbers + label), energy, current activity. Never life-event text."""
    raw = store.get_inner_state(conn)
    if raw is None:
        life, _ = _load(conn, settings, persona, now)
    else:
        life = _Life(conn, settings, persona, raw)
    cur = store.current_activity(conn)
    if cur is not None and stored_controls(conn).get("heartbeat", True):
        spec = act.catalogue()[cur["kind"]]
        life.energy = energy_model.step(life.energy, max(now, life.energy.at), life.ep(now), asleep=spec.asleep,
                                        rate=spec.rate)
    mood = _mood_dict(life, now)
    activity = None
    if cur is not None:
        until = _ends_by(cur, settings)
        activity = {"kind": cur["kind"], "label": cur["label"], "since": _iso(cur["started_at"], settings),
                    "until": _iso(until, settings), "why": cur["why"],
                    "next": act.catalogue()[cur["next_kind"]].label if cur["next_kind"] in act.catalogue() else None}
    return {"mood": mood, "energy": mood["e"], "activity": activity}


def _iso(t: float, settings: Settings) -> str:
    return act.local_time(t, settings.life.tz).isoformat(timespec="seconds")
