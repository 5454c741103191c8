"""Her feelings, energy and persona in Chinese words for the prompt (pure functions of the snapshot's numbers).

The mood words come from the snapshot's `words_zh` when the inner life provides them (discrete feelings
with their causes: 难过、心疼 after bad news); without them a small label is derived from valence and
arousal here, with a neutral band so a near-zero mood reads 平静 rather than a strong word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NEUTRAL_BAND = 0.15  # |valence| below this is neither good nor bad: 平静


def mood_words(mood: Mapping[str, Any]) -> list[str]:
    """1-3 Chinese words for how she feels: the snapshot's words_zh, else derived from v and a."""
    given = mood.get("words_zh")
    if isinstance(given, list | tuple):
        words = [str(w) for w in given if isinstance(w, str) and w.strip()]
        if words:
            return words[:3]
    return [fallback_word(float(mood.get("v", 0.0)), float(mood.get("a", 0.0)))]


def mood_cause(mood: Mapping[str, Any]) -> str:
    """Why she feels so, for her prompt: the strongest named feeling's cause (a category from the inner life's
    data, never chat text). Causes are worded to the user ("你的好消息"); her prompt speaks to her, so the user
    is 对方 there."""
    named = mood.get("feelings")
    if not isinstance(named, list) or not named or not isinstance(named[0], Mapping):
        return ""
    cause = str(named[0].get("cause") or "").strip()
    return cause.replace("你", "对方") if cause else ""


def fallback_word(v: float, a: float) -> str:
    """A plain word from the valence/arousal quadrant (Russell's circumplex), 平静 inside the neutral band."""
    if v <= -NEUTRAL_BAND:
        if a >= NEUTRAL_BAND:
            return "心烦" if v > -0.5 else "难受"
        return "有点低落" if v > -0.5 else "难过"
    if v >= NEUTRAL_BAND:
        if a >= NEUTRAL_BAND:
            return "开心" if v < 0.5 else "很开心"
        return "放松" if v < 0.5 else "满足"
    if a >= 0.35:
        return "有点紧张"
    return "平静"


def energy_words(energy: float) -> str:
    if energy < 0.2:
        return "很累，没什么精神"
    if energy < 0.45:
        return "有点累"
    if energy < 0.75:
        return "精神还可以"
    return "精神很好"


def persona_words(persona: Any) -> str:
    """Her temperament from the persona numbers: sociability, baseline valence, loss aversion."""
    if persona is None:
        return "温和、真诚"
    traits = []
    sociability = float(getattr(persona, "sociability", 0.5))
    traits.append("外向、爱聊天" if sociability >= 0.6 else "慢热、话不多" if sociability <= 0.4 else "随和")
    baseline = float(getattr(persona, "baseline_v", 0.1))
    traits.append("乐观" if baseline >= 0.15 else "容易多想" if baseline <= -0.05 else "情绪平稳")
    if float(getattr(persona, "loss_aversion", 2.0)) >= 2.4:
        traits.append("心思细腻、容易受伤")
    traits.append("真诚")
    return "、".join(traits)
