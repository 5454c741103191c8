"""Energy over the day: when she sleeps (Borbély's S and C) and how awake she feels (the three-process model).

Sleep and waking (Borbély 1982; Daan, Beersma & Borbély 1984): process S (homeostatic sleep
pressure) rises while awake, `S = 1 - (1 - S) exp(-dt / 18.2 h)`, and falls while asleep,
`S = S exp(-dt / 4.2 h)`. Their skewed circadian sine C (five harmonics, period 24 h) moves the sleep
threshold `H+ = 0.67 + 0.12 C` and the wake threshold `H- = 0.17 + 0.12 C`: she falls asleep when S
meets H+ and wakes when S meets H-. So a late night is followed by a shorter sleep that ends near her
usual time (the circadian wake threshold) and S is still high on waking: the debt carries over.

Felt energy (level) follows Åkerstedt & Folkard's three-process model of alertness (TPM, 1995/1997:
alertness = S' + C' + W): the homeostatic part is where S sits between the mean thresholds; the
circadian part is the TPM cosine with its acrophase at 16.8 h plus a 12 h harmonic with its trough
at 14:30 (the post-lunch dip; extended TPM, e.g. Ingre et al. 2014; Monk 2005), which together hold
alertness up in the evening (the wake-maintenance zone, 2-3 h before habitual sleep, Strogatz 1987;
Lavie 1986) before it falls toward bedtime; W is sleep inertia after waking (TPM: depth recovering
at 1.51 / h). Level is continuous across sleep onset: inertia applies on waking only.
Activities scale the rise of S (exercise tires faster, resting slower) or let it fall (naps).
Every function takes time as a parameter; nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from engine.errors import InputError

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
# Felt energy = LEVEL_MID + HOMEO_WEIGHT (h - 0.5) + CIRC_WEIGHT c(t) - W, h = (H+mean - S) / (H+mean - H-mean).
# The weights keep the TPM's proportion of the circadian swing to the homeostatic fall over a waking day
# (C peak-to-trough 2 x 2.5 against S falling ~5 units over 16 h awake; here 2 x 0.38 against 0.80), and
# put her at ~0.2 when S meets H+ near 23:00.
LEVEL_MID = 0.48
HOMEO_WEIGHT = 0.80
CIRC_WEIGHT = 0.38
TPM_ACROPHASE_H = 16.8    # Åkerstedt & Folkard: C' = cos(2 pi (t - 16.8) / 24)
DIP_TROUGH_H = 14.5       # the 12 h harmonic's trough (and its other one at 02:30, the night's low)
DIP_RATIO = 0.4           # its amplitude relative to the 24 h cosine
# Naps: the chance of a nap on a day, from her sleepiness (1 - level) in the early-afternoon window. A logistic
# centred above an ordinary afternoon: ~5 % of ordinary days (sleepiness ~0.32 at 14:30), ~11 % after a
# night cut to 5.7 h (03:00 to 08:45), most days when she is exhausted (sleepiness > 0.56). Adults nap on
# some days, more when short of sleep (e.g. Dinges & Broughton 1989; Faraut et al. 2017).
NAP_WINDOW_H = (12.5, 16.5)
# Sleep debt: the felt cost of short main sleeps beyond what S carries (S is nearly made up by the later
# waking a late night brings). Restricted sleep costs alertness cumulatively and recovers over nights
# (Van Dongen, Maislin, Mullington & Dinges 2003; Banks & Dinges 2007). debt' = carry * debt + (need - slept),
# clamped to [0, DEBT_CAP_H]; a sleep shorter than MAIN_SLEEP_MIN_H is a nap and leaves the debt alone.
SLEEP_NEED_H = 8.0
DEBT_CARRY = 0.5
DEBT_CAP_H = 8.0
DEBT_WEIGHT = 0.03        # felt energy per hour of debt
MAIN_SLEEP_MIN_H = 3.0
NAP_CENTRE = 0.56
NAP_SCALE = 0.08


@dataclass(frozen=True)
class EnergyParams:
    rise_tau_h: float = 18.2
    fall_tau_h: float = 4.2
    chronotype_shift_h: float = 0.0   # persona: + is a later (evening) type, - an earlier (morning) type
    utc_offset_h: float = 8.0         # her local clock (C is phase-locked to local day and night)


@dataclass(frozen=True)
class Energy:
    s: float                        # sleep pressure, 0..1
    asleep: bool
    woke_at: float | None           # when she last woke (for sleep inertia), Unix seconds
    at: float                       # the instant this state describes
    slept_at: float | None = None   # when the current (or last) sleep began
    debt_h: float = 0.0             # sleep debt carried from recent main sleeps (hours, >= 0)

    def to_dict(self) -> dict[str, object]:
        return {"s": self.s, "asleep": self.asleep, "woke_at": self.woke_at, "at": self.at,
                "slept_at": self.slept_at, "debt_h": self.debt_h}

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Energy:
        """Load a stored state; older states without slept_at / debt_h start with no debt."""
        woke, slept = raw.get("woke_at"), raw.get("slept_at")
        return cls(s=float(raw["s"]), asleep=bool(raw["asleep"]),  # type: ignore[arg-type]
                   woke_at=None if woke is None else float(woke), at=float(raw["at"]),  # type: ignore[arg-type]
                   slept_at=None if slept is None else float(slept),  # type: ignore[arg-type]
                   debt_h=float(raw.get("debt_h", 0.0)))  # type: ignore[arg-type]


def local_hour(t: float, params: EnergyParams) -> float:
    """Hours since local midnight (fractional) of instant t in her fixed-offset local time."""
    return ((t / HOUR + params.utc_offset_h) % 24.0 + 24.0) % 24.0


def circadian(t: float, params: EnergyParams) -> float:
    """C(t): the five-harmonic skewed sine, period 24 h, shifted later by the chronotype."""
    x = 2.0 * math.pi * (local_hour(t, params) - C_PHASE_H - params.chronotype_shift_h) / 24.0
    return _harmonics(x)


def _harmonics(x: float) -> float:
    """sum(a * sin((i + 1) x) for the HARMONICS a), written out: the same terms added in the same order
    (starting from 0.0 as sum starts from 0), without a generator; crossing evaluates it ~200 times a call."""
    a1, a2, a3, a4, a5 = HARMONICS
    sin = math.sin
    return 0.0 + a1 * sin(1 * x) + a2 * sin(2 * x) + a3 * sin(3 * x) + a4 * sin(4 * x) + a5 * sin(5 * x)


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
    """Advance to `now` in one exact step with a constant sleep/wake state and activity rate.

    A change of state happens at energy.at: waking there settles the sleep debt of the sleep that ended.
    """
    dt = now - energy.at
    if dt <= 0:
        return energy
    sw = switch(energy, asleep=asleep)
    # Built directly, not with dataclasses.replace: this runs at every heartbeat and every simulated beat.
    return Energy(s=step_s(energy.s, dt, asleep, params, rate), asleep=sw.asleep, woke_at=sw.woke_at, at=now,
                  slept_at=sw.slept_at, debt_h=sw.debt_h)


def step_along(energy: Energy, times: Sequence[float], params_at: Callable[[float], EnergyParams], *,
               asleep: bool, rate: float = 1.0) -> tuple[Energy, list[float]]:
    """step to each of `times` in turn (ascending) and read level there: (the last state, the levels at each).

    Exactly `e = step(e, t, params_at(t), asleep=asleep, rate=rate); level(e, params_at(t))` per time, same
    arithmetic in the same order; the exponential of a repeated step is computed once and no Energy is built
    between the times (a simulated year makes ~100k such steps).
    """
    cur = energy
    out: list[float] = []
    exp, cos, two_pi, four_pi = math.exp, math.cos, 2.0 * math.pi, 4.0 * math.pi
    key: tuple[float, float] | None = None
    factor = 1.0
    s, at = cur.s, cur.at
    for now in times:
        params = params_at(now)
        dt = now - at
        if dt > 0:
            if at == cur.at:   # a change of state happens at the first step only (then asleep is the state's)
                cur = switch(cur, asleep=asleep)
            tau = params.fall_tau_h if asleep else params.rise_tau_h
            if key != (dt, tau):
                key, factor = (dt, tau), exp(-dt * rate / (tau * HOUR))
            s = s * factor if asleep else 1.0 - (1.0 - s) * factor
            at = now
        h = ((at / HOUR + params.utc_offset_h) % 24.0 + 24.0) % 24.0 - params.chronotype_shift_h
        alert = cos(two_pi * (h - TPM_ACROPHASE_H) / 24.0) + DIP_RATIO * cos(four_pi * (h - DIP_TROUGH_H + 6.0) / 24.0)
        woke = cur.woke_at
        drag = 0.0 if cur.asleep or woke is None else INERTIA_DEPTH * exp(-max(0.0, at - woke) / (INERTIA_TAU_H * HOUR))
        raw = (LEVEL_MID + HOMEO_WEIGHT * ((H_PLUS_MEAN - s) / (H_PLUS_MEAN - H_MINUS_MEAN) - 0.5)
               + CIRC_WEIGHT * alert - drag - DEBT_WEIGHT * cur.debt_h)
        out.append(min(1.0, max(0.0, raw)))
    if at != cur.at:
        cur = Energy(s=s, asleep=cur.asleep, woke_at=cur.woke_at, at=at, slept_at=cur.slept_at, debt_h=cur.debt_h)
    return cur, out


def switch(energy: Energy, *, asleep: bool) -> Energy:
    """Fall asleep or wake at energy.at (no time passes); waking from a main sleep updates the debt."""
    if asleep == energy.asleep:
        return energy
    if asleep:
        return replace(energy, asleep=True, slept_at=energy.at)
    debt = energy.debt_h
    if energy.slept_at is not None:
        slept_h = (energy.at - energy.slept_at) / HOUR
        if slept_h >= MAIN_SLEEP_MIN_H:
            debt = min(DEBT_CAP_H, max(0.0, DEBT_CARRY * debt + SLEEP_NEED_H - slept_h))
    return replace(energy, asleep=False, woke_at=energy.at, debt_h=debt)


def homeostatic(s: float) -> float:
    """Where S sits between the mean thresholds: ~1 just after a full sleep, 0 at the mean sleep threshold."""
    return (H_PLUS_MEAN - s) / (H_PLUS_MEAN - H_MINUS_MEAN)


def circadian_alertness(t: float, params: EnergyParams) -> float:
    """The TPM circadian term with the post-lunch 12 h harmonic, shifted later by the chronotype (about -1.5..1.5)."""
    h = local_hour(t, params) - params.chronotype_shift_h
    return (math.cos(2.0 * math.pi * (h - TPM_ACROPHASE_H) / 24.0)
            + DIP_RATIO * math.cos(4.0 * math.pi * (h - DIP_TROUGH_H + 6.0) / 24.0))


def inertia(energy: Energy, t: float) -> float:
    """Process W: the deficit right after waking, fading with the TPM rate; none while asleep."""
    if energy.asleep or energy.woke_at is None:
        return 0.0
    return INERTIA_DEPTH * math.exp(-max(0.0, t - energy.woke_at) / (INERTIA_TAU_H * HOUR))


def level(energy: Energy, params: EnergyParams, now: float | None = None) -> float:
    """Felt energy in [0, 1] at `now` (default energy.at): homeostatic + circadian alertness - sleep inertia.

    `now` is read for the clock-dependent terms only; S is the state's (step first to move S).
    Continuous across sleep onset (no step down when she falls asleep): inertia applies on waking only.
    """
    t = energy.at if now is None else now
    raw = (LEVEL_MID + HOMEO_WEIGHT * (homeostatic(energy.s) - 0.5)
           + CIRC_WEIGHT * circadian_alertness(t, params) - inertia(energy, t) - DEBT_WEIGHT * energy.debt_h)
    return min(1.0, max(0.0, raw))


def nap_pressure(energy: Energy, params: EnergyParams, now: float | None = None) -> float:
    """Her sleepiness, 1 - level, in [0, 1]: what nap_chance reads."""
    return 1.0 - level(energy, params, now)


def nap_chance(energy: Energy, params: EnergyParams, now: float | None = None) -> float:
    """The chance (0..1) that she naps today, read once in the early-afternoon window; 0 outside it or asleep.

    How the day machine uses it: once per day, at the first decision inside NAP_WINDOW_H (local hours, shifted
    by the chronotype) with at least ~3 h before bed, draw u from the day's seeded rng and nap if
    u < nap_chance(...); a nap is `step(..., asleep=True)` for 20-40 min, then waking with inertia.
    """
    t = energy.at if now is None else now
    h = local_hour(t, params) - params.chronotype_shift_h
    if energy.asleep or not NAP_WINDOW_H[0] <= h % 24.0 < NAP_WINDOW_H[1]:
        return 0.0
    return 1.0 / (1.0 + math.exp(-(nap_pressure(energy, params, t) - NAP_CENTRE) / NAP_SCALE))


def sleep_length_h(energy: Energy, params: EnergyParams) -> float:
    """If she falls asleep at energy.at with its S, how long until she wakes at the H- crossing (hours).

    Varies with pressure and circadian phase: later onsets give shorter sleeps ending near her usual wake.
    """
    return (crossing(energy.s, energy.at, params, asleep=True) - energy.at) / HOUR


def crossing(s: float, start: float, params: EnergyParams, *, asleep: bool, limit_h: float = 30.0,
             step_s_: float = 300.0) -> float:
    """First instant after `start` when S meets the threshold for its state (H+ awake, H- asleep).

    Found on a 5-minute grid then refined linearly; the thresholds move slowly, so this is
    accurate to seconds. The loop is the gap to `thresholds` and `step_s` written out (the same arithmetic:
    the grid step's exponential is the same at every step, so it is taken once); a day computes a few of these.
    """
    if not step_s_ > 0:   # a grid that does not move would never end
        raise InputError(f"crossing needs a grid step > 0 s, got {step_s_}")
    t, cur = start, s
    end = start + limit_h * HOUR
    tau = params.fall_tau_h if asleep else params.rise_tau_h
    factor = math.exp(-step_s_ * 1.0 / (tau * HOUR))
    offset, shift, two_pi = params.utc_offset_h, params.chronotype_shift_h, 2.0 * math.pi

    def gap_at(s_: float, t_: float) -> float:
        hour = ((t_ / HOUR + offset) % 24.0 + 24.0) % 24.0
        c = C_AMPLITUDE * _harmonics(two_pi * (hour - C_PHASE_H - shift) / 24.0)
        return ((H_MINUS_MEAN + c) - s_) if asleep else (s_ - (H_PLUS_MEAN + c))

    prev_gap = gap_at(cur, t)
    a1, a2, a3, a4, a5 = HARMONICS
    sin = math.sin
    while t < end:
        nxt = cur * factor if asleep else 1.0 - (1.0 - cur) * factor
        # gap_at(nxt, t + step_s_) written out (this loop runs ~100k times a simulated year)
        x = two_pi * ((((t + step_s_) / HOUR + offset) % 24.0 + 24.0) % 24.0 - C_PHASE_H - shift) / 24.0
        c = C_AMPLITUDE * (0.0 + a1 * sin(1 * x) + a2 * sin(2 * x) + a3 * sin(3 * x) + a4 * sin(4 * x)
                           + a5 * sin(5 * x))
        gap = ((H_MINUS_MEAN + c) - nxt) if asleep else (nxt - (H_PLUS_MEAN + c))
        if gap >= 0:
            frac = 0.0 if gap == prev_gap else -prev_gap / (gap - prev_gap)
            return t + step_s_ * min(1.0, max(0.0, frac))
        t, cur, prev_gap = t + step_s_, nxt, gap
    return end


def spin_up(now: float, params: EnergyParams, days: float = 3.0) -> Energy:
    """A plausible state at `now` for a new companion: run the free rhythm (threshold switching) for days."""
    t = now - days * 24 * HOUR
    energy = Energy(s=0.3, asleep=False, woke_at=None, at=t)
    return free_run(energy, now, params)


def free_run(energy: Energy, until: float, params: EnergyParams) -> Energy:
    """Step over a stretch with no activities (downtime): sleep and wake at the threshold crossings."""
    cur = energy
    while cur.at < until:
        at = crossing(cur.s, cur.at, params, asleep=cur.asleep)
        if at >= until:
            return step(cur, until, params, asleep=cur.asleep)
        cur = switch(step(cur, at, params, asleep=cur.asleep), asleep=not cur.asleep)
    return cur
