"""Compose her system prompt from a template data file and the facts of this request, within a character budget (pure).

The template (engine/data/chat_prompt_zh.toml, or the file [chat] prompt_template names) is a TOML table of
parts with {placeholders}; a non-programmer can reword it. Parts are joined in PART_ORDER with a blank
line; a part whose facts are missing is left out. Over the budget, the memory lines are dropped from the
oldest-ranked end first (the block is ranked best first), then her day's offer, then the relationship
lines; who she is, how she feels and the rules always stay. She never claims a memory that is not in the
block: with no memories the `no_memory` part says so.
"""

from __future__ import annotations

import string
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from engine.errors import ConfigError

BUNDLED = Path(__file__).resolve().parent.parent / "data" / "chat_prompt_zh.toml"
PART_ORDER = ("identity", "feelings", "activity", "woke", "memory", "no_memory", "relationship", "offer", "rules")
# The placeholders each part may use: a template naming another one is refused at load, not at a reply.
PLACEHOLDERS = {
    "identity": {"name", "persona"},
    "feelings": {"mood_words", "mood_cause", "energy_words"},
    "activity": {"activity", "activity_why"},
    "woke": set(),
    "memory": {"memories"},
    "no_memory": set(),
    "relationship": {"entries"},
    "offer": {"event"},
    "rules": set(),
}


@dataclass(frozen=True)
class PromptFacts:
    """What this request's prompt says; None or empty leaves the part out."""

    name: str
    persona: str
    mood_words: str
    energy_words: str
    mood_cause: str = ""  # why she feels so (a category, e.g. 对方家里人走了的事); "" when nothing stands out
    activity: str | None = None
    activity_why: str = ""
    woke: bool = False
    memories: list[str] = field(default_factory=list)  # the cited block's lines, best first
    relationship: list[str] = field(default_factory=list)
    offer: str | None = None  # the one untold event she may tell


@cache
def load_template(path: str = "") -> dict[str, str]:
    """The template's parts (the bundled one for ""), checked: every part a string naming only its placeholders."""
    source = Path(path) if path else BUNDLED
    try:
        raw = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"[chat] prompt_template: cannot read {source} ({type(exc).__name__}); "
                          "point it at a readable UTF-8 TOML file or leave it empty") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"[chat] prompt_template {source}: not valid TOML: {exc}") from None
    parts: dict[str, str] = {}
    for name, allowed in PLACEHOLDERS.items():
        text = raw.get(name, "")
        if not isinstance(text, str):
            raise ConfigError(f"[chat] prompt_template {source}: part {name!r} must be a string")
        used = {f for _, f, _, _ in string.Formatter().parse(text) if f}
        if used - allowed:
            raise ConfigError(f"[chat] prompt_template {source}: part {name!r} uses unknown placeholder(s) "
                              f"{sorted(used - allowed)}; it may use {sorted(allowed) or 'none'}")
        parts[name] = text
    unknown = set(raw) - set(PLACEHOLDERS)
    if unknown:
        raise ConfigError(f"[chat] prompt_template {source}: unknown part(s) {sorted(unknown)}; "
                          f"the parts are {', '.join(PART_ORDER)}")
    return parts


def _render(parts: dict[str, str], facts: PromptFacts, memories: list[str], relationship: list[str],
            offer: str | None) -> str:
    filled: list[str] = []
    for name in PART_ORDER:
        text = parts.get(name, "")
        if not text:
            continue
        if name == "activity" and not facts.activity:
            continue
        if name == "woke" and not facts.woke:
            continue
        if name == "memory" and not memories:
            continue
        if name == "no_memory" and memories:
            continue
        if name == "relationship" and not relationship:
            continue
        if name == "offer" and not offer:
            continue
        values = {"name": facts.name, "persona": facts.persona, "mood_words": facts.mood_words,
                  "mood_cause": f"，因为{facts.mood_cause}" if facts.mood_cause else "",
                  "energy_words": facts.energy_words, "activity": facts.activity or "",
                  "activity_why": facts.activity_why, "memories": "\n".join(memories),
                  "entries": "\n".join(f"- {line}" for line in relationship), "event": offer or ""}
        filled.append(text.format_map(values).strip())
    return "\n\n".join(p for p in filled if p)


def compose(parts: dict[str, str], facts: PromptFacts, budget_chars: int) -> tuple[str, bool]:
    """(her system prompt, whether the offer survived the budget): memories trimmed first, then offer, relationship."""
    memories, relationship, offer = list(facts.memories), list(facts.relationship), facts.offer
    text = _render(parts, facts, memories, relationship, offer)
    while len(text) > budget_chars and memories:
        memories.pop()
        text = _render(parts, facts, memories, relationship, offer)
    if len(text) > budget_chars and offer:
        offer = None
        text = _render(parts, facts, memories, relationship, offer)
    while len(text) > budget_chars and relationship:
        relationship.pop()
        text = _render(parts, facts, memories, relationship, offer)
    return text, offer is not None
