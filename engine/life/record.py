"""Her day in the database: load and save the day state, and write the effects of the day machine's transitions.

The only module of engine/life that touches a connection: engine/life/machine.py decides, this writes
(activity rows, life events told=0, the bounded mood trace), so a replay of the same inputs writes the same rows.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from engine import energy as energy_model
from engine import mood as mood_model
from engine.errors import StoreError
from engine.life.catalogue import ActivitySpec
from engine.life.effects import CloseSuspended, Effect, EndActivity, LifeEvent, StartActivity
from engine.life.machine import energy_level, fresh_state
from engine.life.state import SLOW_PARTS, STATE_VERSION, LifeContext, LifeState, energy_params_by_hour
from engine.recent import RecentMap
from engine.store import life as store
from engine.store.core import get_companion

PRUNE_EVERY_S = 3600.0


def seed_key(conn: Any) -> str:
    companion = get_companion(conn)
    if companion is None:
        return "anima"
    return f"{companion['name']}|{companion['birth_utc']}"


# The heartbeat loads and saves her day state every beat; most of it (plan, cast contact, story, household)
# changes a few times a day, and a transition changes one or two of them. Two caches keep a beat from
# re-encoding and re-parsing what did not change: the JSON of each slow part by identity (the state is
# immutable, so an unchanged part is the same object), and the parsed state of the text this process last
# wrote (same text, same state, whatever the database).
# Both are kept per connection (one per companion: a host serves a thousand, their beats interleave), by its
# id: an id reused by a later connection is harmless, because every hit is checked (the part by identity,
# the text by equality). Each entry is one tuple swapped whole, so a reader on another thread never sees
# half of an update.
STATES_KEPT = 4096
_NO_SLOW: tuple[tuple[Any, str], ...] = tuple((object(), "") for _ in SLOW_PARTS)
_slow_cache: RecentMap[int, tuple[tuple[Any, str], ...]] = RecentMap(STATES_KEPT)  # per part: (part, its JSON)
_read_cache: RecentMap[int, tuple[str, LifeState]] = RecentMap(STATES_KEPT)  # (text, state)


def load_day(conn: Any, ctx: LifeContext, now: float) -> tuple[LifeState, bool]:
    """Her saved day state, or a fresh one (True) when there is none or it is from an older version."""
    text = store.get_inner_state_text(conn)
    hit = _read_cache.get(id(conn))
    if text is not None and hit is not None and text == hit[0]:
        return hit[1], False
    raw = None if text is None else json.loads(text)
    if raw is not None and raw.get("version") == STATE_VERSION:
        return LifeState.from_dict(raw), False
    seed = (raw or {}).get("seed_key") or seed_key(conn)
    fresh = fresh_state(ctx, seed, now)
    if raw is not None and raw.get("mood"):   # an older day state: keep her mood, start the day machine afresh
        fresh = replace(fresh, mood=mood_model.Mood.from_dict(raw["mood"]), last_chat_at=raw.get("last_chat_at"))
    return fresh, True


def save(conn: Any, state: LifeState, now: float) -> None:
    """Write her day state as one JSON row (sorted keys, so a replay writes the same bytes)."""
    key = id(conn)
    cached = _slow_cache.get(key) or _NO_SLOW
    slow = []
    for name, hit in zip(SLOW_PARTS, cached, strict=True):
        part = getattr(state, name)
        slow.append(hit if hit[0] is part else (part, _dumps(state.part_dict(name))))
    if any(new is not old for new, old in zip(slow, cached, strict=True)):
        _slow_cache.put(key, tuple(slow))
    fast = _dumps(state.fast_dict())
    # Each half is what json.dumps(sort_keys=True) writes for its keys (the fast keys sorted, then the slow
    # ones, "key": value joined by ", "): the text is the one the two-object merge always wrote.
    text = fast[:-1] + ", " + ", ".join(f'"{name}": {js}' for name, (_, js) in zip(SLOW_PARTS, slow, strict=True)) + "}"
    store.put_inner_state_text(conn, text, now)
    _read_cache.put(key, (text, state))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def apply(conn: Any, effects: list[Effect]) -> tuple[dict[str, Any] | None, list[int]]:
    """Write the effects in order; return the activity they started (as current_activity shapes it) and event ids."""
    started: dict[str, Any] | None = None
    events: list[int] = []
    for effect in effects:
        if isinstance(effect, EndActivity):
            store.end_activity(conn, effect.activity_id, effect.status, effect.at, effect.detail)
        elif isinstance(effect, CloseSuspended):
            store.close_suspended(conn, effect.activity_id, effect.status, effect.detail)
        elif isinstance(effect, LifeEvent):
            events.append(store.add_life_event(conn, effect.text, effect.at, told=False, origin="life",
                                               kind=effect.kind, activity_id=effect.activity_id))
        elif isinstance(effect, StartActivity):
            activity_id = store.start_activity(conn, kind=effect.kind, label=effect.label,
                                               started_at=effect.started_at, expected_end=effect.expected_end,
                                               why=effect.why, next_kind=effect.next_kind, detail=effect.detail)
            started = {"id": activity_id, "kind": effect.kind, "label": effect.label,
                       "started_at": effect.started_at, "expected_end": effect.expected_end, "why": effect.why,
                       "next_kind": effect.next_kind, "detail": effect.detail}
        # MoodPush is already in the state the transition returned; nothing to write.
    return started, events


def apply_transition(conn: Any, effects: list[Effect]) -> tuple[dict[str, Any], list[int]]:
    """Write a transition's effects; a transition always starts her next activity (she is always doing one thing)."""
    started, events = apply(conn, effects)
    if started is None:
        raise StoreError("a day-machine transition started no activity; the effects were not a transition")
    return started, events


def trace(conn: Any, ctx: LifeContext, state: LifeState, now: float, kind: str | None) -> LifeState:
    """One mood_trace point per interval (and a prune of old points once an hour)."""
    interval = ctx.settings.life.trace_interval_s
    bucket = math.floor(now / interval) * interval
    if bucket <= state.last_trace_at:
        return state
    v, a, d = mood_model.values(state.mood, ctx.mp)
    store.put_trace_point(conn, bucket, round(v, 6), round(a, 6), round(d, 6),
                          round(energy_level(ctx, state), 6), kind)
    state = state.evolve(last_trace_at=bucket)
    if now - state.last_prune_at >= PRUNE_EVERY_S:
        store.prune_trace(conn, now - ctx.settings.life.trace_retention_days * 86400.0)
        state = state.evolve(last_prune_at=now)
    return state


def sample_quiet(conn: Any, ctx: LifeContext, state: LifeState, beats: list[float], spec: ActivitySpec | None,
                 kind: str | None) -> LifeState:
    """Beats at which nothing ends: machine.advance and trace at each, as a beat-by-beat run does, same numbers.

    A simulated year has ~100k such beats: mood and energy are stepped along all of them in one call each
    (mood.relax_along, energy.step_along: the same arithmetic without a state per beat), and the points are
    written in one call per prune interval.
    """
    asleep = spec.asleep if spec else state.energy.asleep
    rate = spec.rate if spec else 1.0
    settings = ctx.settings
    mood, shown = mood_model.relax_along(state.mood, beats, ctx.mp)
    energy, levels = energy_model.step_along(state.energy, beats, energy_params_by_hour(settings, ctx.persona),
                                             asleep=asleep, rate=rate)
    last_trace, last_prune = state.last_trace_at, state.last_prune_at
    interval = settings.life.trace_interval_s
    floor = math.floor
    rows: list[tuple[float, float, float, float, float, str | None]] = []
    for beat, (v, a, d), e in zip(beats, shown, levels, strict=True):
        bucket = floor(beat / interval) * interval
        if bucket <= last_trace:
            continue
        rows.append((bucket, round(v, 6), round(a, 6), round(d, 6), round(e, 6), kind))
        last_trace = bucket
        if beat - last_prune >= PRUNE_EVERY_S:
            store.put_trace_points(conn, rows)
            rows = []
            store.prune_trace(conn, beat - settings.life.trace_retention_days * 86400.0)
            last_prune = beat
    store.put_trace_points(conn, rows)
    return state.evolve(mood=mood, energy=energy, last_trace_at=last_trace, last_prune_at=last_prune)
