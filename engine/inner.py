"""Her inner state in the database: step mood, energy and activity with elapsed time, and answer how she is.

Sync glue over a connection (the daemon runs it on its DB thread; the simulator and CLI call it
directly). The decisions live in engine/life/machine.py (a pure transition returning effects) and the
writes in engine/life/record.py; this module runs one heartbeat, a chat interruption or a restart over
them in one transaction each. `inner_snapshot` never contains life-event text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine import energy as energy_model
from engine import feelings as feel
from engine import mood as mood_model
from engine.appraisal import appraise, bounded_delta, read_events
from engine.control import Switches
from engine.life import machine, record
from engine.life.catalogue import catalogue
from engine.life.localtime import local_time
from engine.life.state import LifeContext, LifeState, context, energy_params, mood_params
from engine.persona import Persona
from engine.settings import Settings
from engine.store import life as store
from engine.store import transaction
from engine.store.core import log_event, read_switches

__all__ = [
    "JUMP_IS_GAP_S", "appraise_turn", "energy_params", "inner_snapshot", "interrupt_for_chat", "mood_params",
    "resume_after_gap", "resume_after_jump", "step_inner",
]
MAX_TRANSITIONS_PER_STEP = 500     # a guard: a day has ~25 transitions; a runaway loop must not hang her
# A forward wall-clock step at least this long while she runs is a gap in her life, not time to live through
# (issue 24): longer than a few beats, shorter than anything she would do.
JUMP_IS_GAP_S = 300.0

# --- public API ----------------------------------------------------------------------------------


def step_inner(conn: Any, settings: Settings, persona: Persona | None, now: float,
               switches: Switches, *, forecast_next: bool = True,
               summary: bool = True) -> dict[str, Any]:
    """One heartbeat: step mood/energy (switch 'mood_step') and the activity machine (switch 'life') to now.

    `switches` is this beat's typed Switches (read once for its transaction). `forecast_next=False` (simulation)
    skips the forecast of what follows each activity: the same life, without its "next" preview.
    `summary=False` (simulation) leaves out the mood summary, which nobody reads mid-run ("mood" is None).

    Returns {"backwards": bool, "transitions": n, "life_events": n, "activity": kind, "current": her current
    activity row (as store.current_activity shapes it, or None), "mood": her mood now (numbers, energy "e"
    and label, as in inner_snapshot)}. A clock that went backwards steps nothing (dt = 0) and re-anchors her
    time at `now`; the caller logs it.
    """
    heartbeat_on, life_on = switches.mood_step, switches.life
    ctx = context(settings, persona, forecast_next=forecast_next)
    events: list[int] = []
    with transaction(conn):
        life, fresh = record.load_day(conn, ctx, now)
        backwards = now < life.last_step_at
        if backwards:
            life = replace(life, mood=replace(life.mood, at=now), energy=replace(life.energy, at=now),
                           last_step_at=now,
                           last_trace_at=min(life.last_trace_at, now - settings.life.trace_interval_s))
        cur = store.current_activity(conn)
        if life_on and (fresh or cur is None or life.life_paused):
            if cur is not None:
                store.end_activity(conn, cur["id"], "abandoned", now, {**cur["detail"], "ended_by": "life_off"})
            life, start = machine.replan_from(ctx, replace(life, life_paused=False), now, heartbeat_on)
            cur, _ = record.apply_transition(conn, [start])
        elif not life_on:
            life = replace(life, life_paused=True)
        transitions = 0
        if life_on and cur is not None and not backwards:
            while _ends_by(cur, settings) <= now and transitions < MAX_TRANSITIONS_PER_STEP:
                end = _ends_by(cur, settings)
                if heartbeat_on:
                    life = machine.advance(ctx, life, end, catalogue()[cur["kind"]])
                suspended = store.all_open_suspended(conn) if cur["kind"] == "chat" else []
                life, effects = machine.transition(ctx, life, cur, end, suspended, mood_on=heartbeat_on)
                cur, written = record.apply_transition(conn, effects)
                events += written
                transitions += 1
        spec = catalogue()[cur["kind"]] if cur else None
        if heartbeat_on:
            life = machine.advance(ctx, life, now, spec)
            life = record.trace(conn, ctx, life, now, cur["kind"] if cur else None)
        else:  # frozen: time passes, her state does not change
            life = replace(life, mood=replace(life.mood, at=max(life.mood.at, now)),
                           energy=replace(life.energy, at=max(life.energy.at, now)))
        life = life.evolve(last_step_at=now)
        record.save(conn, life, now)
    return {"backwards": backwards, "transitions": transitions, "life_events": len(events),
            "activity": cur["kind"] if cur else None, "current": cur,
            "mood": _mood_dict(ctx, life, now) if summary else None}


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
    ctx = context(settings, persona)
    with transaction(conn):
        life, fresh = record.load_day(conn, ctx, now)
        cur = None if fresh else store.current_activity(conn)
        start = life.last_step_at
        quick = max(60.0, 4.0 * settings.heartbeat.interval_s)
        if cur is not None and 0 <= now - start <= quick and _ends_by(cur, settings) > now:
            life = machine.advance(ctx, life, now, catalogue()[cur["kind"]])
        else:
            if not fresh:
                if now > start:
                    life = replace(life, mood=mood_model.relax(life.mood, now, ctx.mp),
                                   energy=energy_model.free_run(life.energy, now, energy_params(settings, persona,
                                                                                                  start)))
                else:  # her clock went backwards while the daemon was down: nothing to step
                    life = replace(life, mood=replace(life.mood, at=now), energy=replace(life.energy, at=now))
                record.apply(conn, machine.close_for_gap(store.current_activity(conn), store.all_open_suspended(conn),
                                                         min(start, now), life.last_step_at))
            else:
                stale = store.current_activity(conn)
                if stale is not None:   # a day state from an older version: its activity ends here
                    record.apply(conn, machine.close_for_gap(stale, store.all_open_suspended(conn), now, now))
            life, first = machine.replan_from(ctx, life, now)
            cur, _ = record.apply_transition(conn, [first])
        life = replace(life, life_paused=False, last_step_at=now,
                       last_trace_at=min(life.last_trace_at, now - settings.life.trace_interval_s))
        life = record.trace(conn, ctx, life, now, cur["kind"] if cur else None)
        record.save(conn, life, now)


def resume_after_jump(conn: Any, settings: Settings, persona: Persona | None, step_s: float, now: float) -> None:
    """The wall clock jumped forward by step_s while she ran: one `gap` event and resume_after_gap over it, as
    after downtime (a month jumped in one beat used to be lived as ~500 invented activities)."""
    with transaction(conn):
        log_event(conn, now, "gap", since=now - step_s, until=now, seconds=round(step_s, 3), cause="clock_step")
        resume_after_gap(conn, settings, persona, now - step_s, now)


def interrupt_for_chat(conn: Any, turn_id: str | None, now: float, *, quiet_after_chat_s: float = 600.0,
                       switches: Switches | None = None) -> None:
    """A chat turn arrived: suspend what she is doing (with its remaining time) and be in the chat.

    `switches`: the caller's read of this transaction (read here only when none is given).
    """
    with transaction(conn):
        raw = store.get_inner_state(conn)
        if raw is not None:
            raw["last_chat_at"] = now
            store.put_inner_state(conn, raw, now)
        if not (switches or read_switches(conn)).life:
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
        spec = catalogue()["chat"]
        store.start_activity(conn, kind="chat", label=spec.label, started_at=now,
                             expected_end=now + quiet_after_chat_s, why="chat", next_kind=cur["kind"],
                             detail={"last_chat_at": now, "first_turn_id": turn_id, "last_turn_id": turn_id,
                                     "turns": 1})


def appraise_turn(conn: Any, settings: Settings, persona: Persona | None, user_text: str | None,
                  companion_text: str | None, affect: dict[str, Any] | None, now: float,
                  switches: Switches | None = None) -> dict[str, Any]:
    """Push her mood with one chat turn (control 'appraisal'); return the mood after the push."""
    ctx = context(settings, persona)
    with transaction(conn):
        life, _ = record.load_day(conn, ctx, now)
        if (switches or read_switches(conn)).appraisal:
            push = appraise(user_text, companion_text, affect)
            # One turn moves her at most a share of her range (engine/appraisal/bound.py says why).
            delta = bounded_delta(push, ctx.mp, settings.mood.chat_push_gain)
            mood = mood_model.push(mood_model.relax(life.mood, now, ctx.mp), delta, ctx.mp)
            # Issue 24: the turn also raises named feelings (grief, worry, gladness) that fade over hours or
            # days and pull her mood layer all that time: the bound above is the sting of one sentence, the
            # feelings are what stays (engine/feelings.py).
            raises = feel.affect_raises(push) if affect is not None else feel.turn_raises(read_events(user_text))
            life = life.evolve(mood=mood, feelings=tuple(feel.apply_raises(life.feelings, raises, now)))
            cur = store.current_activity(conn)
            life = machine.retarget(ctx, life, now, "chat" if cur is not None else None)
            record.save(conn, life, now)
        return _mood_dict(ctx, life, now)


def _mood_dict(ctx: LifeContext, life: LifeState, now: float) -> dict[str, Any]:
    mood = mood_model.relax(life.mood, now, ctx.mp)
    v, a, d = mood_model.values(mood, ctx.mp)
    e = energy_model.level(life.energy, energy_params(ctx.settings, ctx.persona, now), max(now, life.energy.at))
    return {"v": round(v, 4), "a": round(a, 4), "d": round(d, 4), "e": round(e, 4),
            "label": feel.label_en(life.feelings, now) or mood_model.label(v, a, d), "words_zh": feel.words_zh(life.feelings, now),
            "feelings": feel.shown(life.feelings, now)}


def inner_snapshot(conn: Any, settings: Settings, persona: Persona | None, now: float,
                   switches: Switches | None = None) -> dict[str, Any]:
    """How she is right now: mood (numbers + label), energy, current activity. Never life-event text."""
    ctx = context(settings, persona)
    life, _ = record.load_day(conn, ctx, now)
    cur = store.current_activity(conn)
    if cur is not None and (switches or read_switches(conn)).mood_step:
        spec = catalogue()[cur["kind"]]
        life = replace(life, energy=energy_model.step(life.energy, max(now, life.energy.at),
                                                      energy_params(settings, persona, now), asleep=spec.asleep,
                                                      rate=spec.rate))
    mood = _mood_dict(ctx, life, now)
    activity = None
    if cur is not None:
        until = _ends_by(cur, settings)
        activity = {"kind": cur["kind"], "label": cur["label"], "since": _iso(cur["started_at"], settings),
                    "until": _iso(until, settings), "why": cur["why"],
                    "next": catalogue()[cur["next_kind"]].label if cur["next_kind"] in catalogue() else None}
    return {"mood": mood, "energy": mood["e"], "activity": activity}


def _iso(t: float, settings: Settings) -> str:
    return local_time(t, settings.life.tz).isoformat(timespec="seconds")
