"""Her day state: frozen values the day machine passes and engine/life/record.py saves.

`LifeState` is the one name for her day state (mood, energy, plan, household, cast contact, story), saved as one
JSON row; `LifeContext` what does not change within a step. What a transition asks to be written is
engine/life/effects.py.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from engine import energy as energy_model
from engine import mood as mood_model
from engine.life import household as house_model
from engine.life.localtime import local_time
from engine.life.place import City, city
from engine.life.plan import DayPlan
from engine.life.week import Role, role
from engine.life.world import WorldDay, world_day
from engine.persona import Persona
from engine.recent import RecentMap
from engine.settings import Settings

STATE_VERSION = 2
# The parts of LifeState that change a few times a day (a transition changes one or two), sorted by name:
# engine/life/record.py encodes each only when it is a new object.
SLOW_PARTS = ("feelings", "house", "met", "plan", "story")


@dataclass(frozen=True)
class LifeContext:
    """What does not change within a step: settings, persona, her mood parameters, role and city."""

    settings: Settings
    persona: Persona
    mp: mood_model.MoodParams
    role: Role
    city: City
    # Forecast what comes after each activity (activity.next_kind, shown as "next" in /v1/state). A simulation
    # turns it off: nobody reads a forecast mid-run, and the life lived is the same (the forecast is pure).
    forecast_next: bool = True

    @property
    def tz(self) -> str:
        return self.settings.life.tz


@dataclass(frozen=True)
class LifeState:
    """Her day state, saved as one JSON row: everything the next transition reads."""

    mood: mood_model.Mood
    energy: energy_model.Energy
    plan: DayPlan | None
    last_step_at: float
    seed_key: str
    last_trace_at: float = -math.inf
    last_prune_at: float = -math.inf
    last_chat_at: float | None = None
    last_social_at: float | None = None
    life_paused: bool = False
    house: house_model.Household = field(default_factory=house_model.Household)
    met: dict[str, float] = field(default_factory=dict)
    story: dict[str, Any] = field(default_factory=dict)
    slept_h: float | None = None
    # Her named feelings with causes (engine/feelings.py), as raised (each fades from its own instant), and the
    # day's own valence tone (engine.mood.waking_tone) that her feelings are added to (issue 24).
    feelings: tuple[dict[str, Any], ...] = ()
    day_tone: float = 0.0
    last_tail: str | None = None   # the clause her last sentence ended on (narrate avoids repeating it at once)

    def evolve(self, **changes: Any) -> LifeState:
        """A copy with `changes`: dataclasses.replace without its per-call field introspection (a simulated
        year makes ~100k of these; a LifeState has no __post_init__ to run, and unknown names are refused)."""
        fields = self.__dict__
        for name in changes:
            if name not in fields:
                raise TypeError(f"LifeState has no field {sorted(changes.keys() - fields.keys())}")
        new = object.__new__(LifeState)
        new.__dict__.update(fields)
        new.__dict__.update(changes)
        return new

    def to_dict(self) -> dict[str, Any]:
        return {**self.fast_dict(), **{name: self.part_dict(name) for name in SLOW_PARTS}}

    def fast_dict(self) -> dict[str, Any]:
        """to_dict without the SLOW_PARTS: what changes at every step."""
        return {"version": STATE_VERSION, "mood": self.mood.to_dict(), "energy": self.energy.to_dict(),
                "last_step_at": self.last_step_at, "seed_key": self.seed_key,
                "last_trace_at": None if self.last_trace_at == -math.inf else self.last_trace_at,
                "last_prune_at": None if self.last_prune_at == -math.inf else self.last_prune_at,
                "last_chat_at": self.last_chat_at, "last_social_at": self.last_social_at,
                "life_paused": self.life_paused, "slept_h": self.slept_h, "day_tone": self.day_tone,
                "last_tail": self.last_tail}

    def part_dict(self, name: str) -> Any:
        """One of the SLOW_PARTS as to_dict writes it."""
        if name == "feelings":
            return list(self.feelings)
        if name == "house":
            return self.house.to_dict()
        if name == "met":
            return dict(sorted(self.met.items()))
        if name == "plan":
            return self.plan
        if name == "story":
            return self.story
        raise KeyError(name)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LifeState:
        return cls(mood=mood_model.Mood.from_dict(raw["mood"]), energy=energy_model.Energy.from_dict(raw["energy"]),
                   plan=raw.get("plan"), last_step_at=float(raw["last_step_at"]), seed_key=str(raw["seed_key"]),
                   last_trace_at=raw.get("last_trace_at") or -math.inf,
                   last_prune_at=raw.get("last_prune_at") or -math.inf,
                   last_chat_at=raw.get("last_chat_at"), last_social_at=raw.get("last_social_at"),
                   life_paused=bool(raw.get("life_paused", False)),
                   house=house_model.Household.from_dict(raw.get("house")), met=dict(raw.get("met") or {}),
                   story=dict(raw.get("story") or {}), slept_h=raw.get("slept_h"),
                   feelings=tuple(f for f in raw.get("feelings") or () if isinstance(f, dict)),
                   # a state saved before issue 24 keeps its day's tone where the mood layer holds it
                   day_tone=float(raw.get("day_tone", raw["mood"].get("tone", 0.0)) or 0.0),
                   last_tail=raw.get("last_tail"))


# --- parameters ----------------------------------------------------------------------------------


# The contexts built (with and without the forecast), by the identity of their frozen settings and persona:
# every heartbeat of a companion asks for the context of the same two objects, and building one (mood
# parameters, role, city) is a fixed cost per beat. One entry per (settings, persona) pair, so a host
# serving a thousand companions keeps each one's; an entry holds both objects, so their ids stay theirs.
CONTEXTS_KEPT = 4096
_contexts: RecentMap[tuple[int, int], tuple[Settings, Persona | None, dict[bool, LifeContext]]] = RecentMap(CONTEXTS_KEPT)


def context(settings: Settings, persona: Persona | None, *, forecast_next: bool = True) -> LifeContext:
    key = (id(settings), id(persona))
    hit = _contexts.get(key)
    same = hit is not None and hit[0] is settings and hit[1] is persona
    if same and hit is not None and forecast_next in hit[2]:
        return hit[2][forecast_next]
    p = persona or Persona(loss_aversion=settings.mood.loss_aversion)
    ctx = LifeContext(settings=settings, persona=persona or Persona(), mp=mood_params(settings, p),
                      role=role(settings.life.role), city=city(settings.life.city), forecast_next=forecast_next)
    built = hit[2] if same and hit is not None else {}
    _contexts.put(key, (settings, persona, {**built, forecast_next: ctx}))  # a new dict: readers see whole ones
    return ctx


def mood_params(settings: Settings, persona: Persona | None) -> mood_model.MoodParams:
    p = persona or Persona(loss_aversion=settings.mood.loss_aversion)
    m = settings.mood
    return mood_model.MoodParams(
        baseline=(p.baseline_v, p.baseline_a, p.baseline_d),
        half_life_h=(m.half_life_v_h * p.half_life_factor_v, m.half_life_a_h * p.half_life_factor_a,
                     m.half_life_d_h * p.half_life_factor_d),
        loss_aversion=p.loss_aversion,
        emotion_half_life_min=m.emotion_half_life_min,
        mood_gain=m.mood_gain,
        tone_sd=m.tone_sd,
        tone_persistence=m.tone_persistence,
    )


def energy_params(settings: Settings, persona: Persona | None, t: float) -> energy_model.EnergyParams:
    return _energy_params(settings.energy.rise_tau_h, settings.energy.fall_tau_h,
                          persona.chronotype_shift_h if persona else 0.0, _utc_offset_h(settings.life.tz, t // 3600))


def energy_params_by_hour(settings: Settings, persona: Persona | None) -> Callable[[float], energy_model.EnergyParams]:
    """energy_params(settings, persona, t) as a function of t that looks up each hour of t once in a row of calls
    (they depend on t only through its hour): for stepping along a stretch of beats."""
    hour, params = math.nan, None

    def at(t: float) -> energy_model.EnergyParams:
        nonlocal hour, params
        if params is None or t // 3600 != hour:
            hour, params = t // 3600, energy_params(settings, persona, t)
        return params

    return at


@lru_cache(maxsize=4096)
def _utc_offset_h(tz: str, hour_index: float) -> float:
    # Offsets change on whole hours (DST), so one lookup per hour of her life is exact and keeps a year fast.
    offset = local_time(hour_index * 3600.0, tz).utcoffset()
    return offset.total_seconds() / 3600.0 if offset else 0.0


@lru_cache(maxsize=64)
def _energy_params(rise: float, fall: float, shift: float, offset_h: float) -> energy_model.EnergyParams:
    return energy_model.EnergyParams(rise_tau_h=rise, fall_tau_h=fall, chronotype_shift_h=shift, utc_offset_h=offset_h)


@lru_cache(maxsize=1024)
def world_of(date: dt.date, home: City, seed: str) -> WorldDay:
    """The world of one date, computed once per (date, city, companion): activities and sentences all read it."""
    return world_day(date, home, seed)
