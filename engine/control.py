"""The life_control registry: every runtime switch anima knows, its type, default and meaning, and the typed Switches value.

Unknown keys and badly typed values are rejected before anything is written. The registry is the
one place a default lives: `Switches` (the typed value a transaction reads once and passes down)
is built from it, so no call site repeats a default as `.get("x", True)`. A renamed switch keeps
its old name as an alias: it is accepted everywhere a key is, resolved to the new name, and the
caller is told it is deprecated (event `control.deprecated`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from engine.errors import InputError

# The one log event of a switch change, whatever its source (API, CLI); and the note for an old name.
CHANGED_EVENT = "control.changed"
DEPRECATED_EVENT = "control.deprecated"


@dataclass(frozen=True)
class ControlKey:
    name: str
    type: type
    default: Any
    description: str
    aliases: tuple[str, ...] = ()  # old names still accepted (resolved to `name`, with a deprecation note)


REGISTRY: dict[str, ControlKey] = {
    key.name: key
    for key in [
        # Was "heartbeat": the beat itself always runs (liveness, watchdog, jobs); this switch only
        # decides whether her mood and energy move with it.
        ControlKey("mood_step", bool, True, "step mood and energy every heartbeat; off -> they stay frozen",
                   aliases=("heartbeat",)),
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

# old name -> current name
ALIASES: dict[str, str] = {alias: spec.name for spec in REGISTRY.values() for alias in spec.aliases}


@dataclass(frozen=True)
class Switches:
    """Every switch's effective value, typed; built from the registry's defaults and the stored rows.

    Read once per transaction (engine/store/core.read_switches) and passed down. The fields are the
    registry's keys (a test keeps them equal); they carry no defaults of their own.
    """

    mood_step: bool
    life: bool
    memory_search: bool
    memory_hybrid: bool
    memory_reread: bool
    memory_facts: bool
    consolidation: bool
    model_operator: bool
    sharing: bool
    appraisal: bool

    @classmethod
    def defaults(cls) -> Switches:
        return cls(**{name: spec.default for name, spec in REGISTRY.items()})

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> Switches:
        """The stored values (current or old names; the current name wins) over the registry's defaults."""
        values = {name: spec.default for name, spec in REGISTRY.items()}
        for key in sorted(stored, key=lambda k: k in REGISTRY):  # aliases first, so a current name overrides
            name = ALIASES.get(key, key)
            if name in values:
                values[name] = stored[key]
        return cls(**values)

    def value(self, key: str) -> Any:
        return getattr(self, canonical(key))

    def as_dict(self) -> dict[str, Any]:
        """Current names only: what the API and CLI show."""
        return asdict(self)

    def legacy(self) -> dict[str, Any]:
        """`as_dict()` plus every old name ("heartbeat" beside "mood_step"): what `anima status` shows, and
        the daemon context's `controls` view kept for old callers; no engine code reads a switch from it."""
        values = self.as_dict()
        return {**values, **{alias: values[name] for alias, name in ALIASES.items()}}

    @property
    def consolidated_recall(self) -> bool:
        """Consolidated memory (facts, the relationship view) joins context only while recall and facts are on."""
        return self.memory_search and self.memory_facts


def canonical(key: str) -> str:
    """The current name of `key` (itself, or what an old name became); InputError for an unknown key."""
    return spec_of(key).name


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
    """The registry entry of `key` (an old name resolves to its current entry)."""
    try:
        return REGISTRY[ALIASES.get(key, key)]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise InputError(f"unknown control key {key!r} (known: {known})") from None
