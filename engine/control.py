"""The life_control registry: every runtime switch anima knows, with its type, default and meaning.

Unknown keys and badly typed values are rejected before anything is written. The daemon re-reads
the table every heartbeat, so a switch takes effect within one beat.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.errors import InputError


@dataclass(frozen=True)
class ControlKey:
    name: str
    type: type
    default: Any
    description: str


REGISTRY: dict[str, ControlKey] = {
    key.name: key
    for key in [
        ControlKey("heartbeat", bool, True, "step mood and energy every heartbeat"),
        ControlKey("life", bool, True, "run her activity state machine (what she is doing) and record life events"),
        ControlKey("memory_search", bool, True, "recall memories for context; off -> context has no memory block"),
        ControlKey("memory_hybrid", bool, True, "use the vector lane in recall; off -> keyword (FTS5) lane only"),
        ControlKey("memory_reread", bool, True, "re-read each hit's whole source turn; off -> the memory row only"),
        ControlKey("memory_facts", bool, True, "let consolidated facts join recall as their own hits"),
        ControlKey("consolidation", bool, True, "run consolidation jobs during her sleep and on episode backlog"),
        ControlKey("model_operator", bool, True, "use the configured chat model to pick consolidation operations"),
        ControlKey("sharing", bool, True, "offer untold life events on the sharing channel"),
        ControlKey("appraisal", bool, True, "let chat turns push her mood"),
    ]
}


def parse_value(key: str, text: str) -> Any:
    """Turn the CLI/HTTP text `text` into the typed value of `key`, or raise InputError."""
    spec = spec_of(key)
    if spec.type is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "on", "yes"):
            return True
        if lowered in ("0", "false", "off", "no"):
            return False
        raise InputError(f"control {key} takes on/off (true/false, 1/0), got {text!r}")
    if spec.type is int:
        try:
            return int(text)
        except ValueError:
            raise InputError(f"control {key} takes an integer, got {text!r}") from None
    if spec.type is float:
        try:
            return float(text)
        except ValueError:
            raise InputError(f"control {key} takes a number, got {text!r}") from None
    return text


def check_value(key: str, value: Any) -> Any:
    """Validate an already-typed value (from JSON) for `key`."""
    spec = spec_of(key)
    if spec.type is bool and not isinstance(value, bool):
        raise InputError(f"control {key} takes true or false, got {json.dumps(value)}")
    if spec.type in (int, float) and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise InputError(f"control {key} takes a number, got {json.dumps(value)}")
    if spec.type is str and not isinstance(value, str):
        raise InputError(f"control {key} takes a string, got {json.dumps(value)}")
    return value


def spec_of(key: str) -> ControlKey:
    try:
        return REGISTRY[key]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise InputError(f"unknown control key {key!r} (known: {known})") from None


def effective(stored: dict[str, Any]) -> dict[str, Any]:
    """Every key's value: the stored one where set, else the default."""
    return {name: stored.get(name, spec.default) for name, spec in REGISTRY.items()}
