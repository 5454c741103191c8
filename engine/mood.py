"""Mood dynamics: relaxation toward a baseline and appraisal pushes, in closed form.

State: valence V, arousal A and dominance D, each in [-1, 1] (energy E in [0, 1] comes from
engine.energy and is reported beside them). Each dimension keeps its deviation from the personal
baseline in two latent parts, a positive one and a negative one, because they fade differently:
between events each part relaxes in closed form, `x <- b + (x - b) * exp(-ln2 * dt / h)` on the
latent deviation, so a gap of any length is one exact step. Negative pushes are multiplied by the
loss-aversion factor lambda (Tversky & Kahneman 1992: 2.25; persona range 1.5-2.5) and relax with
a longer half-life (negativity bias, Baumeister et al. 2001). The shown value is the baseline plus
the latent deviation passed through a soft saturation, `headroom * tanh(dev / headroom)`, whose
headroom is the distance to the bound on that side: slope 1 near the baseline, never out of range.
The mood label (ALMA's eight PAD octants with slightly / moderately / fully) is derived, never stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LN2 = math.log(2.0)
HOUR = 3600.0
DIMS = ("v", "a", "d")
# Latent deviations beyond this are indistinguishable after saturation (tanh(3) = 0.995); capping keeps
# a long run of pushes from making her unresponsive for days.
LATENT_CAP = 3.0


@dataclass(frozen=True)
class MoodParams:
    baseline: tuple[float, float, float] = (0.1, 0.0, 0.05)
    half_life_h: tuple[float, float, float] = (6.0, 2.0, 8.0)
    negative_half_life_factor: float = 1.8
    loss_aversion: float = 2.25


@dataclass(frozen=True)
class Mood:
    pos: tuple[float, float, float]   # latent positive deviations (>= 0)
    neg: tuple[float, float, float]   # latent negative deviations (<= 0)
    at: float                         # the instant this state describes

    def to_dict(self) -> dict[str, object]:
        return {"pos": list(self.pos), "neg": list(self.neg), "at": self.at}

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Mood:
        pos = tuple(float(x) for x in raw["pos"])  # type: ignore[attr-defined]
        neg = tuple(float(x) for x in raw["neg"])  # type: ignore[attr-defined]
        return cls(pos=pos, neg=neg, at=float(raw["at"]))  # type: ignore[arg-type]


def at_baseline(now: float) -> Mood:
    return Mood(pos=(0.0, 0.0, 0.0), neg=(0.0, 0.0, 0.0), at=now)


def decay_factor(dt: float, half_life_h: float) -> float:
    """exp(-ln2 * dt / h): the closed-form share of a deviation left after dt seconds."""
    return math.exp(-LN2 * max(0.0, dt) / (half_life_h * HOUR))


def relax(mood: Mood, now: float, params: MoodParams) -> Mood:
    """Let each latent part fade toward the baseline over now - mood.at (no-op if now is not later)."""
    dt = now - mood.at
    if dt <= 0:
        return mood
    pos = tuple(p * decay_factor(dt, h) for p, h in zip(mood.pos, params.half_life_h, strict=True))
    neg = tuple(n * decay_factor(dt, h * params.negative_half_life_factor)
                for n, h in zip(mood.neg, params.half_life_h, strict=True))
    return Mood(pos=pos, neg=neg, at=now)  # type: ignore[arg-type]


def push(mood: Mood, delta: tuple[float, float, float], params: MoodParams) -> Mood:
    """Apply one appraised event; negative components weigh lambda times more (loss aversion)."""
    pos = list(mood.pos)
    neg = list(mood.neg)
    for i, x in enumerate(delta):
        if not math.isfinite(x):
            continue
        if x > 0:
            pos[i] = min(LATENT_CAP, pos[i] + x)
        elif x < 0:
            neg[i] = max(-LATENT_CAP, neg[i] + params.loss_aversion * x)
    return Mood(pos=tuple(pos), neg=tuple(neg), at=mood.at)  # type: ignore[arg-type]


def saturate(baseline: float, deviation: float) -> float:
    """baseline + headroom * tanh(deviation / headroom), headroom = distance to the bound on that side."""
    headroom = (1.0 - baseline) if deviation >= 0 else (1.0 + baseline)
    if headroom <= 0:
        return baseline
    return max(-1.0, min(1.0, baseline + headroom * math.tanh(deviation / headroom)))


def values(mood: Mood, params: MoodParams) -> tuple[float, float, float]:
    """The shown (V, A, D), each in [-1, 1]."""
    return tuple(  # type: ignore[return-value]
        saturate(b, p + n) for b, p, n in zip(params.baseline, mood.pos, mood.neg, strict=True)
    )


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
