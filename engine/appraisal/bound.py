"""The turn bound: how far one chat turn may move her shown mood, from her own mood parameters.

Why: one turn at affect -0.8 used to move valence by -0.58, 1.8x her whole 14-day range (issue 12):
gain 0.35 x lambda 2.25 x 0.8 = 0.63 of latent deviation. A companion is moved by what she is
told, but one sentence should not take her further than her ordinary ups and downs.

The bound per dimension and side is TURN_SHARE of the distance from her baseline to the bound on
that side (the same headroom engine/mood.py saturates with): max_step = TURN_SHARE * (1 - b) upward,
TURN_SHARE * (1 + b) downward. With TURN_SHARE = 0.15 and the default valence baseline 0.1 that is
+0.135 / -0.165. With two layers (engine/mood.py) that capped step is the turn's *feeling*, gone
with the emotion's half-life (20 min); what stays the evening is its share in the mood layer, at most
~0.3 of the step (mood_gain 0.35, peaking ~1.5 h later): <= 0.05 on valence, half the SD of her
day-mean valence (0.08-0.11 over 120 quiet days, bench/affect_curves.py). So one sad turn stings
and then colours her evening a little, a run of them makes a bad day. (One-layer measurement that set
TURN_SHARE, bench/appraisal_bound.py: valence range 0.25-0.32 over 14 days; with two layers and no
day tone on the day machine yet it reads 0.13-0.15, the day tone widens it again.)
Because the shown value is
`b + headroom * tanh(dev / headroom)` (slope <= 1), capping the latent step at max_step caps the
shown step too, whatever her state; the negativity weight on valence is inside the cap (a negative
valence push reaches the cap sooner). With two layers (engine/mood.py) the push is an emotion whose
added deviation only shrinks afterwards (mood_gain < 1), so the cap bounds the turn's effect at every
later instant too, not only at the moment of the push.
The bound is the sting of one sentence. What stays for days is separate and deliberate (issue 24): the turn also
raises named feelings (engine/feelings.py: grief, worry, gladness) whose pull on the mood layer's targets fades
with their own half-lives, so bad news still weighs on the next evening.
"""

from __future__ import annotations

from engine.appraisal.affect import Push
from engine.mood import MoodParams

TURN_SHARE = 0.15


def turn_bound(params: MoodParams) -> tuple[tuple[float, float], ...]:
    """Per dimension (max shown step up, max shown step down), both >= 0."""
    return tuple((TURN_SHARE * max(0.0, 1.0 - b), TURN_SHARE * max(0.0, 1.0 + b)) for b in params.baseline)


def bounded_delta(push: Push, params: MoodParams, gain: float) -> Push:
    """The latent delta to hand to engine.mood.push: gain * push, capped so the shown step stays in turn_bound.

    engine.mood.push multiplies a negative valence component by the negativity weight, so the negative
    valence cap is divided by it here: the step that reaches the latent state is at most max_step either
    way. Arousal and dominance are symmetric (no weight).
    """
    out = []
    for i, (x, (up, down)) in enumerate(zip(push, turn_bound(params), strict=True)):
        step = gain * x
        weight = params.valence_negative_weight if i == 0 else 1.0
        if step > 0:
            step = min(step, up)
        elif step < 0:
            step = max(step, -down / max(weight, 1e-9))
        out.append(step)
    return (out[0], out[1], out[2])
