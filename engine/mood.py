"""Mood dynamics: short emotions that feed a slow mood around a personal baseline, in closed form.

Two layers after ALMA (Gebhard 2005: emotion -> mood -> personality). Each dimension (valence V,
arousal A, dominance D, each shown in [-1, 1]; energy E in [0, 1] comes from engine.energy) keeps
two latent deviations from the persona's baseline:
- an *emotion* e, the immediate reaction to one event, with a half-life of minutes
  (`emotion_half_life_min`, default 20): `de/dt = -alpha e`, alpha = ln2 / h_e;
- a *mood* m with a half-life of hours (`half_life_h`), fed by the emotion's integral and drifting
  toward the day's tone T (valence only, see day_tone): `dm/dt = -beta (m - T) + k e`,
  beta = ln2 / h_m, k = mood_gain * alpha.
So one event changes the mood by about `mood_gain` of its size and fades with it; a run of events
in a few hours piles up in the mood and lasts the evening. The linear system has the exact solution
  e(t) = e0 exp(-alpha t)
  m(t) = T + (m0 - T) exp(-beta t) + k e0 (exp(-beta t) - exp(-alpha t)) / (alpha - beta),
so a gap of any length is one exact step. With no events she rests at her baseline (plus the tone).
The shown value is `baseline + headroom * tanh((m + e) / headroom)`, headroom the distance to the bound
on that side: slope 1 near the baseline, never out of range. With mood_gain < 1 the latent deviation
one push adds, (1 - c) exp(-alpha t) + c exp(-beta t) times the push with c = k / (alpha - beta), only
shrinks after the push (its derivative is negative for all t), so a bound on the push bounds its whole
effect (engine/appraisal/bound.py relies on it).

Negativity bias, one mechanism, valence only: a negative valence impulse weighs `negativity_weight`
(1.5-2.0) times a positive one of the same size ("bad is stronger than good", Baumeister, Bratslavsky,
Finkenauer & Vohs 2001; Rozin & Royzman 2001), and fades like any other. Arousal and dominance are
symmetric. The loss-aversion lambda of money gambles (Tversky & Kahneman 1992) is not used: the
persona's stored `loss_aversion` (1.5-2.5, a name kept so stored rows still load) is read as her
sensitivity to bad events and mapped onto the weight range.

Bad days on her own: day_tone(seed, date) is a seeded AR(1) over days (zero mean), and sleep_tone
lowers a day after a short night; the day machine sets their sum with set_tone once a day.
The mood label (ALMA's eight PAD octants with slightly / moderately / fully) is derived, never stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

LN2 = math.log(2.0)
HOUR = 3600.0
MINUTE = 60.0
DIMS = ("v", "a", "d")
# Latent deviations beyond this are indistinguishable after saturation (tanh(3) = 0.995); capping keeps
# a long run of pushes from making her unresponsive for days.
LATENT_CAP = 3.0
# The negativity weight range: Baumeister et al. 2001 and Rozin & Royzman 2001 report bad events weighing
# roughly 1.5-2 times good ones of the same size (no single constant; this is the range their reviews span).
NEGATIVITY_WEIGHT_RANGE = (1.5, 2.0)
# The persona's stored sensitivity scale (persona.toml bounds for `loss_aversion`), mapped linearly onto it.
SENSITIVITY_RANGE = (1.5, 2.5)
# day_tone sums the AR(1) innovations of this many past days: persistence ** 40 is < 1e-8 for persistence <= 0.6.
TONE_MEMORY_DAYS = 40

Triple = tuple[float, float, float]


@dataclass(frozen=True)
class MoodParams:
    baseline: Triple = (0.1, 0.0, 0.05)
    half_life_h: Triple = (6.0, 2.0, 8.0)          # the mood layer (hours)
    # Kept so older callers still construct MoodParams; ignored: the one negativity mechanism is
    # negativity_weight on valence (see the module docstring).
    negative_half_life_factor: float = 1.0
    # Her sensitivity to bad events on the persona's 1.5-2.5 scale (stored under this name); mapped onto
    # NEGATIVITY_WEIGHT_RANGE unless negativity_weight is given.
    loss_aversion: float = 2.0
    emotion_half_life_min: float = 20.0            # the emotion layer (minutes)
    mood_gain: float = 0.35                        # share of an emotion that becomes mood (its integral)
    negativity_weight: float | None = None         # explicit valence weight for negative impulses
    tone_sd: float = 0.12                          # day-to-day SD of the valence tone (latent units)
    tone_persistence: float = 0.6                  # AR(1) coefficient from one day's tone to the next
    sleep_need_h: float = 7.5                      # a night shorter than this lowers the next day
    sleep_tone_per_h: float = 0.04                 # valence tone per hour of sleep short of the need
    sleep_tone_floor: float = -0.2                 # the most a short night can lower a day

    @property
    def valence_negative_weight(self) -> float:
        """The weight on negative valence impulses (1.5-2.0, Baumeister et al. 2001)."""
        if self.negativity_weight is not None:
            return self.negativity_weight
        lo, hi = NEGATIVITY_WEIGHT_RANGE
        s_lo, s_hi = SENSITIVITY_RANGE
        share = min(1.0, max(0.0, (self.loss_aversion - s_lo) / (s_hi - s_lo)))
        return lo + (hi - lo) * share


@dataclass(frozen=True)
class Mood:
    emotion: Triple      # fast latent deviations (minutes)
    mood: Triple         # slow latent deviations (hours)
    at: float            # the instant this state describes
    tone: float = 0.0    # the day's valence offset the mood layer drifts toward (set_tone)
    tone_a: float = 0.0  # the arousal and dominance the mood layer drifts toward (set_targets: what she is
    tone_d: float = 0.0  # doing and what she feels, issue 24); 0 is her baseline

    @property
    def pos(self) -> Triple:
        """The positive part of each total latent deviation (for readers of the one-layer state)."""
        (e0, e1, e2), (m0, m1, m2) = self.emotion, self.mood   # written out: every saved state writes it
        return (max(0.0, e0 + m0), max(0.0, e1 + m1), max(0.0, e2 + m2))

    @property
    def neg(self) -> Triple:
        """The negative part of each total latent deviation."""
        (e0, e1, e2), (m0, m1, m2) = self.emotion, self.mood
        return (min(0.0, e0 + m0), min(0.0, e1 + m1), min(0.0, e2 + m2))

    def to_dict(self) -> dict[str, object]:
        # pos/neg are derived views written for older readers; from_dict reads emotion/mood when present.
        out: dict[str, object] = {"emotion": list(self.emotion), "mood": list(self.mood), "tone": self.tone,
                                  "at": self.at, "pos": list(self.pos), "neg": list(self.neg)}
        if self.tone_a or self.tone_d:
            out["tone_ad"] = [self.tone_a, self.tone_d]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Mood:
        """Load a stored state; a one-layer state ({"pos", "neg", "at"}) becomes all mood, no emotion."""
        at = float(raw["at"])  # type: ignore[arg-type]
        tone = float(raw.get("tone", 0.0))  # type: ignore[arg-type]
        if "mood" in raw:
            emotion = _triple(raw.get("emotion", (0.0, 0.0, 0.0)))
            ad = raw.get("tone_ad") or (0.0, 0.0)
            return cls(emotion=emotion, mood=_triple(raw["mood"]), at=at, tone=tone,
                       tone_a=float(ad[0]), tone_d=float(ad[1]))  # type: ignore[index]
        total = tuple(p + n for p, n in zip(_triple(raw["pos"]), _triple(raw["neg"]), strict=True))
        return cls(emotion=(0.0, 0.0, 0.0), mood=total, at=at, tone=tone)  # type: ignore[arg-type]


def _triple(raw: object) -> Triple:
    a, b, c = (float(x) for x in raw)  # type: ignore[attr-defined]
    return (a, b, c)


def at_baseline(now: float) -> Mood:
    return Mood(emotion=(0.0, 0.0, 0.0), mood=(0.0, 0.0, 0.0), at=now)


def decay_factor(dt_s: float, half_life_h: float) -> float:
    """exp(-ln2 * dt / h): the closed-form share of a deviation left after dt seconds."""
    return math.exp(-LN2 * max(0.0, dt_s) / (half_life_h * HOUR))


def _cap(x: float) -> float:
    return max(-LATENT_CAP, min(LATENT_CAP, x))


def relax(mood: Mood, now: float, params: MoodParams) -> Mood:
    """Let emotions fade into the mood and the mood toward baseline + tone over now - mood.at (no-op if not later)."""
    dt_s = now - mood.at
    if dt_s <= 0:
        return mood
    # The exact two-layer solution (module docstring) for the three dimensions: the emotion rate is shared,
    # so its exponential is
    # computed once (this runs at every heartbeat and ~100k times in a simulated year); same arithmetic.
    alpha = LN2 / (params.emotion_half_life_min * MINUTE / HOUR * HOUR)
    fa = math.exp(-alpha * dt_s)
    k = params.mood_gain * alpha
    emotion, mood_layer = [], []
    targets = (mood.tone, mood.tone_a, mood.tone_d)
    for i, (e0, m0, mh) in enumerate(zip(mood.emotion, mood.mood, params.half_life_h, strict=True)):
        target = targets[i]
        beta = LN2 / (mh * HOUR)
        fb = math.exp(-beta * dt_s)
        fed = k * e0 * dt_s * fa if abs(alpha - beta) < 1e-9 * alpha else k * e0 * (fb - fa) / (alpha - beta)
        emotion.append(e0 * fa)
        mood_layer.append(_cap(target + (m0 - target) * fb + fed))
    return Mood(emotion=(emotion[0], emotion[1], emotion[2]), mood=(mood_layer[0], mood_layer[1], mood_layer[2]),
                at=now, tone=mood.tone, tone_a=mood.tone_a, tone_d=mood.tone_d)


def relax_along(mood: Mood, times: Sequence[float], params: MoodParams) -> tuple[Mood, list[Triple]]:
    """relax to each of `times` in turn (ascending) and read values there: (the last mood, the values at each).

    Exactly `m = relax(m, t, params); values(m, params)` per time, same arithmetic in the same order, but the
    exponentials of a repeated step (a simulation beats every 300 s) are computed once and no Mood is built
    between the times: a simulated year makes ~100k such steps.
    """
    (e0, e1, e2), (m0, m1, m2), at, tone = mood.emotion, mood.mood, mood.at, mood.tone
    tone_a, tone_d = mood.tone_a, mood.tone_d
    (b0, b1, b2), (hl0, hl1, hl2) = params.baseline, params.half_life_h
    alpha = LN2 / (params.emotion_half_life_min * MINUTE / HOUR * HOUR)
    k = params.mood_gain * alpha
    betas = (LN2 / (hl0 * HOUR), LN2 / (hl1 * HOUR), LN2 / (hl2 * HOUR))
    near = tuple(abs(alpha - beta) < 1e-9 * alpha for beta in betas)
    exp, tanh, cap = math.exp, math.tanh, LATENT_CAP
    # saturate written out below (the call was a third of this loop): its headroom above and below each baseline
    up0, up1, up2, down0, down1, down2 = 1.0 - b0, 1.0 - b1, 1.0 - b2, 1.0 + b0, 1.0 + b1, 1.0 + b2
    step_dt = math.nan
    fa = fb0 = fb1 = fb2 = 0.0
    out: list[Triple] = []
    for now in times:
        dt_s = now - at
        if dt_s > 0:
            if dt_s != step_dt:
                step_dt = dt_s
                fa = exp(-alpha * dt_s)
                fb0, fb1, fb2 = exp(-betas[0] * dt_s), exp(-betas[1] * dt_s), exp(-betas[2] * dt_s)
            f0 = k * e0 * dt_s * fa if near[0] else k * e0 * (fb0 - fa) / (alpha - betas[0])
            f1 = k * e1 * dt_s * fa if near[1] else k * e1 * (fb1 - fa) / (alpha - betas[1])
            f2 = k * e2 * dt_s * fa if near[2] else k * e2 * (fb2 - fa) / (alpha - betas[2])
            e0, e1, e2 = e0 * fa, e1 * fa, e2 * fa
            m0 = max(-cap, min(cap, tone + (m0 - tone) * fb0 + f0))
            m1 = max(-cap, min(cap, tone_a + (m1 - tone_a) * fb1 + f1))
            m2 = max(-cap, min(cap, tone_d + (m2 - tone_d) * fb2 + f2))
            at = now
        x0, x1, x2 = m0 + e0, m1 + e1, m2 + e2
        h0 = up0 if x0 >= 0 else down0
        h1 = up1 if x1 >= 0 else down1
        h2 = up2 if x2 >= 0 else down2
        out.append((b0 if h0 <= 0 else max(-1.0, min(1.0, b0 + h0 * tanh(x0 / h0))),
                    b1 if h1 <= 0 else max(-1.0, min(1.0, b1 + h1 * tanh(x1 / h1))),
                    b2 if h2 <= 0 else max(-1.0, min(1.0, b2 + h2 * tanh(x2 / h2)))))
    return Mood(emotion=(e0, e1, e2), mood=(m0, m1, m2), at=at, tone=tone, tone_a=tone_a, tone_d=tone_d), out


def push(mood: Mood, delta: Triple, params: MoodParams) -> Mood:
    """Apply one appraised event as an emotion; a negative valence impulse weighs valence_negative_weight more."""
    emotion = list(mood.emotion)
    for i, x in enumerate(delta):
        if not math.isfinite(x):
            continue
        if i == 0 and x < 0:
            x *= params.valence_negative_weight
        emotion[i] = _cap(emotion[i] + x)
    return Mood(emotion=(emotion[0], emotion[1], emotion[2]), mood=mood.mood, at=mood.at, tone=mood.tone,
                tone_a=mood.tone_a, tone_d=mood.tone_d)


def set_tone(mood: Mood, tone: float) -> Mood:
    """The day's valence tone (day_tone + sleep_tone): the mood layer drifts to it with its own half-life."""
    if not math.isfinite(tone):
        return mood
    return replace(mood, tone=_cap(tone))


def set_targets(mood: Mood, v: float, a: float, d: float) -> Mood:
    """What the mood layer drifts toward on each dimension (issue 24): the day's tone plus her feelings on
    valence, what she is doing plus her feelings on arousal and dominance. Constant until the next call, so
    every step stays one exact closed-form step; the day machine re-targets at each transition."""
    v, a, d = (_cap(x) if math.isfinite(x) else 0.0 for x in (v, a, d))
    return replace(mood, tone=v, tone_a=a, tone_d=d)


def saturate(baseline: float, deviation: float) -> float:
    """baseline + headroom * tanh(deviation / headroom), headroom = distance to the bound on that side."""
    headroom = (1.0 - baseline) if deviation >= 0 else (1.0 + baseline)
    if headroom <= 0:
        return baseline
    return max(-1.0, min(1.0, baseline + headroom * math.tanh(deviation / headroom)))


def values(mood: Mood, params: MoodParams) -> Triple:
    """The shown (V, A, D), each in [-1, 1]: baseline + saturated (mood + emotion)."""
    (b0, b1, b2), (m0, m1, m2), (e0, e1, e2) = params.baseline, mood.mood, mood.emotion
    return saturate(b0, m0 + e0), saturate(b1, m1 + e1), saturate(b2, m2 + e2)


# --- bad days on her own -------------------------------------------------------------------------


@lru_cache(maxsize=4096)   # pure; consecutive days share 39 of their 40 innovations
def _normal(seed: str, day: dt.date) -> float:
    """A standard normal draw fixed by (seed, date): Box-Muller on two uniforms from SHA-256."""
    digest = hashlib.sha256(f"{seed}|tone|{day.isoformat()}".encode()).digest()
    u1 = (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64
    u2 = int.from_bytes(digest[8:16], "big") / 2.0**64
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def day_tone(seed: str, date: dt.date, params: MoodParams) -> float:
    """Her valence tone for a local date: a stationary AR(1) over days, zero mean, SD tone_sd.

    x_d = phi x_{d-1} + sigma sqrt(1 - phi^2) eps_d with eps_d ~ N(0, 1) fixed by (seed, date), written as
    the moving sum of the last TONE_MEMORY_DAYS innovations so that any date is computed on its own, the
    same on every run and after any downtime. Day-to-day persistence of daily mood is well documented in
    diary studies (e.g. moderate lag-1 autocorrelation of daily affect, Kuppens, Allen & Sheeber 2010 on
    emotional inertia). Zero mean: over many days her valence averages her persona's baseline.
    How the day machine applies it: once per local day, at waking from the main sleep,
    `mood = set_tone(mood, waking_tone(seed, today, slept_h, p))`; the mood layer drifts to it over hours.
    """
    phi, sigma = params.tone_persistence, params.tone_sd
    scale = sigma * math.sqrt(max(0.0, 1.0 - phi * phi))
    total = 0.0
    for k in range(TONE_MEMORY_DAYS):
        total += (phi ** k) * _normal(seed, date - dt.timedelta(days=k))
    return scale * total


def sleep_tone(slept_h: float, params: MoodParams) -> float:
    """A short night lowers the next day's valence (poor sleep predicts lower next-day mood in
    ecological momentary studies, e.g. Triantafillou et al. 2019).

    sleep_tone_per_h per hour short of sleep_need_h, down to sleep_tone_floor; a night of normal length
    (or longer) costs nothing, so on her usual nights the long-run mean stays at the baseline.
    """
    if not math.isfinite(slept_h):
        return 0.0
    short = max(0.0, params.sleep_need_h - slept_h)
    return max(params.sleep_tone_floor, -params.sleep_tone_per_h * short)


def waking_tone(seed: str, date: dt.date, slept_h: float | None, params: MoodParams) -> float:
    """The tone to set when she wakes on `date` after `slept_h` hours (None: unknown, no sleep effect)."""
    return day_tone(seed, date, params) + (0.0 if slept_h is None else sleep_tone(slept_h, params))


# --- labels ---------------------------------------------------------------------------------------

# ALMA (Gebhard 2005) names the eight octants of PAD space; intensity is the distance from the origin
# in thirds of the cube's half-diagonal sqrt(3).
_OCTANTS = {
    (1, 1, 1): "exuberant", (-1, -1, -1): "bored", (1, 1, -1): "dependent", (-1, -1, 1): "disdainful",
    (1, -1, 1): "relaxed", (-1, 1, -1): "anxious", (1, -1, -1): "docile", (-1, 1, 1): "hostile",
}
OCTANT_ZH = {
    "exuberant": "兴高采烈", "bored": "无聊", "dependent": "依赖", "disdainful": "冷淡",
    "relaxed": "放松", "anxious": "焦虑", "docile": "温顺", "hostile": "烦躁",
}
_INTENSITY_ZH = {"slightly": "有点", "moderately": "比较", "fully": "非常"}


def octant(v: float, a: float, d: float) -> str:
    key = tuple(1 if x >= 0 else -1 for x in (v, a, d))
    return _OCTANTS[key]  # type: ignore[index]


def intensity(v: float, a: float, d: float) -> str:
    r = math.sqrt(v * v + a * a + d * d) / math.sqrt(3.0)
    if r < 1.0 / 3.0:
        return "slightly"
    if r < 2.0 / 3.0:
        return "moderately"
    return "fully"


def label(v: float, a: float, d: float) -> str:
    """ALMA mood word with intensity, e.g. 'slightly relaxed'."""
    return f"{intensity(v, a, d)} {octant(v, a, d)}"


def label_zh(v: float, a: float, d: float) -> str:
    """The same label in plain Chinese, e.g. '有点放松'."""
    return _INTENSITY_ZH[intensity(v, a, d)] + OCTANT_ZH[octant(v, a, d)]
