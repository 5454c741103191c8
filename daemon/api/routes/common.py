"""Glue the routes share: her persona object, inner-state projection and time formatting."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from daemon.api.state import ApiState
from engine.chat import feelings
from engine.persona import Persona, persona_of_companion


def persona_of(api: ApiState) -> Persona:
    """Her Persona: the one the inner-life part published, else rebuilt from the companion row."""
    published = api.ctx.persona
    if published is not None:
        return published
    if api.persona_obj is None:
        api.persona_obj = persona_of_companion(api.ctx.companion) or Persona.from_dict(None)
    return api.persona_obj  # type: ignore[no-any-return]


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def mood_of(raw: dict[str, Any]) -> dict[str, Any]:
    """The contract's Mood shape from the inner-life dict (numbers rounded for the wire), with her feelings in
    Chinese words (the inner life's words_zh when it gives them, else a word from the numbers: engine/chat/feelings.py)."""
    return {
        "v": round(float(raw["v"]), 4),
        "a": round(float(raw["a"]), 4),
        "d": round(float(raw["d"]), 4),
        "e": round(float(raw["e"]), 4),
        "label": str(raw.get("label", "")),
        "words_zh": feelings.mood_words(raw),
        **({"feelings": raw["feelings"]} if isinstance(raw.get("feelings"), list) else {}),
    }


def activity_of(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """What she is doing (kind, label, since/until as ISO-8601 in her zone, why, next); never life event text."""
    if not raw:
        return None
    return {key: raw.get(key) for key in ("kind", "label", "since", "until", "why", "next")}


def inner_view(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {
        "mood": mood_of(snapshot["mood"]),
        "energy": round(float(snapshot["energy"]), 4),
        "activity": activity_of(snapshot.get("activity")),
    }
