"""Energy over the day: Borbély's two-process model (sleep pressure S and circadian C), in closed form.

Process S (homeostatic sleep pressure) rises while awake, `S = 1 - (1 - S) exp(-dt / 18.2 h)`, and
falls while asleep, `S = S exp(-dt / 4.2 h)` (Daan, Beersma & Borbély 1984). Process C is their
skewed circadian sine, a sum of five harmonics with period 24 h; it moves the sleep threshold
`H+ = 0.67 + 0.12 C` and the wake threshold `H- = 0.17 + 0.12 C`. She falls asleep when S meets H+
and wakes when S meets H-. Her felt energy is where S sits between the two thresholds, lowered for
a while after waking by sleep inertia (Åkerstedt & Folkard's process W, time constant ~0.66 h).
Activities scale the rise of S (exercise tires faster, resting slower) or let it fall (naps).
Every function takes time as a parameter; nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

HOUR = 3600.0
# Daan, Beersma & Borbély (1984) skewed circadian sine: amplitudes of harmonics 1..5.
HARMONICS = (0.97, 0.22, 0.07, 0.03, 0.001)
H_PLUS_MEAN = 0.67
H_MINUS_MEAN = 0.17
C_AMPLITUDE = 0.12
# Phase of C (local clock hours): with the default taus this puts sleep near 23:00 and waking near 07:00.
C_PHASE_H = 8.6
INERTIA_DEPTH = 0.35      # process W: energy deficit right after waking (fraction of the 0..1 scale)
INERTIA_TAU_H = 0.66      # Folkard & Åkerstedt: W recovers with rate 1.51 / h
# S sits a little below H- in the late morning (C rises faster than S); scale so that peak reads just under 1
# instead of clipping, which would flatten "highest in the late morning" into a plateau.
LEVEL_SCALE = 0.92


@dataclass(frozen=True)
class EnergyParams:
    rise_tau_h: float = 18.2
    fall_tau_h: float = 4.2
    chronotype_shift_h: float = 0.0   # persona: + is a later (evening) type, - an earlier (morning) type
    utc_offset_h: float = 8.0         # her local clock (C is phase-locked to local day and night)


@dataclass(frozen=True)
class Energy:
    s: float                 # sleep pressure, 0..1
    asleep: bool
    woke_at: float | None    # when she last woke (for sleep inertia), Unix seconds
    at: float                # the instant this state describes

    def to_dict(self) -> dict[str, object]:
        return {"s": self.s, "asleep": self.asleep, "woke_at": self.woke_at, "at": self.at}

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Energy:
        woke = raw.get("woke_at")
        return cls(s=float(raw["s"]), asleep=bool(raw["asleep"]),  # type: ignore[arg-type]
                   woke_at=None if woke is None else float(woke), at=float(raw["at"]))  # type: ignore[arg-type]


def local_hour(t: float, params: EnergyParams) -> float:
    """Hours since local midnight (fractional) of instant t in her fixed-offset local time."""
    return ((t / HOUR + params.utc_offset_h) % 24.0 + 24.0) % 24.0


def circadian(t: float, params: EnergyParams) -> float:
    """C(t): the five-harmonic skewed sine, period 24 h, shifted later by the chronotype."""
    x = 2.0 * math.pi * (local_hour(t, params) - C_PHASE_H - params.chronotype_shift_h) / 24.0
    return sum(a * math.sin((i + 1) * x) for i, a in enumerate(HARMONICS))


def thresholds(t: float, params: EnergyParams) -> tuple[float, float]:
    """(H+, H-): sleep onset and waking thresholds at instant t."""
    c = C_AMPLITUDE * circadian(t, params)
    return H_PLUS_MEAN + c, H_MINUS_MEAN + c


def step_s(s: float, dt: float, asleep: bool, params: EnergyParams, rate: float = 1.0) -> float:
    """Process S after dt seconds, closed form; `rate` scales the awake rise (activity cost) or the fall."""
    if dt <= 0:
        return s
    if asleep:
        return s * math.exp(-dt * rate / (params.fall_tau_h * HOUR))
    return 1.0 - (1.0 - s) * math.exp(-dt * rate / (params.rise_tau_h * HOUR))


def step(energy: Energy, now: float, params: EnergyParams, *, asleep: bool, rate: float = 1.0) -> Energy:
    """Advance to `now` in one exact step with a constant sleep/wake state and activity rate."""
    dt = now - energy.at
    if dt <= 0:
        return energy
    woke_at = energy.woke_at
    if energy.asleep and not asleep:
        woke_at = energy.at
    return Energy(s=step_s(energy.s, dt, asleep, params, rate), asleep=asleep, woke_at=woke_at, at=now)


def level(energy: Energy, params: EnergyParams, now: float | None = None) -> float:
    """Felt energy in [0, 1]: 1 at the wake threshold, 0 at the sleep threshold, minus sleep inertia."""
    t = energy.at if now is None else now
    h_plus, h_minus = thresholds(t, params)
    raw = LEVEL_SCALE * (h_plus - energy.s) / (h_plus - h_minus)
    if energy.asleep:
        raw -= INERTIA_DEPTH  # asleep she has no energy to spend (and waking into inertia)
    elif energy.woke_at is not None:
        raw -= INERTIA_DEPTH * math.exp(-max(0.0, t - energy.woke_at) / (INERTIA_TAU_H * HOUR))
    return min(1.0, max(0.0, raw))


def crossing(s: float, start: float, params: EnergyParams, *, asleep: bool, limit_h: float = 30.0,
             step_s_: float = 300.0) -> float:
    """First instant after `start` when S meets the threshold for its state (H+ awake, H- asleep).

    Found on a 5-minute grid then refined linearly; the thresholds move slowly, so this is
    accurate to seconds.
    """
    t, cur = start, s
    end = start + limit_h * HOUR
    prev_gap = _gap(cur, t, params, asleep)
    while t < end:
        nxt = step_s(cur, step_s_, asleep, params)
        gap = _gap(nxt, t + step_s_, params, asleep)
        if gap >= 0:
            frac = 0.0 if gap == prev_gap else -prev_gap / (gap - prev_gap)
            return t + step_s_ * min(1.0, max(0.0, frac))
        t, cur, prev_gap = t + step_s_, nxt, gap
    return end


def _gap(s: float, t: float, params: EnergyParams, asleep: bool) -> float:
    h_plus, h_minus = thresholds(t, params)
    return (h_minus - s) if asleep else (s - h_plus)


def spin_up(now: float, params: EnergyParams, days: float = 3.0) -> Energy:
    """A plausible state at `now` for a new companion: run the free rhythm (threshold switching) for days."""
    t = now - days * 24 * HOUR
    energy = Energy(s=0.3, asleep=False, woke_at=None, at=t)
    return free_run(energy, now, params)


def free_run(energy: Energy, until: float, params: EnergyParams) -> Energy:
    """Step over a stretch with no activities (downtime): sleep and wake at the threshold crossings."""
    cur = energy
    while cur.at < until:
        switch = crossing(cur.s, cur.at, params, asleep=cur.asleep)
        if switch >= until:
            return step(cur, until, params, asleep=cur.asleep)
        cur = step(cur, switch, params, asleep=cur.asleep)
        cur = replace(cur, asleep=not cur.asleep, woke_at=switch if cur.asleep else cur.woke_at)
    return cur
