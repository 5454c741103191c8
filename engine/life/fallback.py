"""Fallback sentences from the catalogue's templates: what she writes while narration has nothing to say.

engine/life/narrate.py composes sentences from state; where it returns None the day machine uses these, so
the daemon always writes an event. The slot details are drawn once when an activity starts (seeded), and
reused if she is interrupted and resumes or gives up.
"""

from __future__ import annotations

from functools import cache

from engine.life.catalogue import SLOT, catalogue, slot_lists
from engine.life.localtime import rng_for


def details_for(seed_key: str, kind: str, started_at: float) -> dict[str, str]:
    """The concrete details (book, dish, friend...) of one activity, fixed when it starts."""
    spec = catalogue()[kind]
    rng = rng_for(seed_key, kind, round(started_at, 3), "details")
    lists = slot_lists()
    template = rng.randrange(len(spec.templates)) if spec.templates else -1
    texts = [spec.templates[template]] if template >= 0 else []
    texts.append(spec.partial)
    details: dict[str, str] = {"template": str(template)}
    for text in texts:
        for slot in _slots_of(text):
            if slot not in details:
                details[slot] = rng.choice(lists[slot])
    return details


@cache
def _slots_of(template: str) -> tuple[str, ...]:
    """The slots a catalogue template names, in order (the catalogue's few hundred templates, parsed once)."""
    return tuple(SLOT.findall(template))


def render(text: str, details: dict[str, str]) -> str:
    return SLOT.sub(lambda m: details.get(m.group(1), m.group(0)), text)


def completion_text(kind: str, details: dict[str, str], disappointed: bool = False) -> str | None:
    """The finished activity's fallback sentence; a disappointment has its own (never "it went well")."""
    spec = catalogue()[kind]
    if disappointed:
        return render(spec.let_down, details) if spec.let_down else f"{spec.label}不太顺利，有点扫兴。"
    index = int(details.get("template", "-1"))
    if index < 0 or not spec.templates:
        return None
    return render(spec.templates[index], details)


def resumed_text(kind: str, details: dict[str, str], remaining_s: float) -> str:
    spec = catalogue()[kind]
    minutes = max(1, round(remaining_s / 60))
    return f"{render(spec.partial, details)}的时候你来找我聊天，聊完又接着{spec.label}，还剩大概{minutes}分钟。"


def abandoned_text(kind: str, details: dict[str, str]) -> str:
    spec = catalogue()[kind]
    return f"{render(spec.partial, details)}的时候你来找我聊天，聊完已经过了时候，{spec.label}就先放下了。"
