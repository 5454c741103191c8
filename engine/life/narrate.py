"""Her sentences about her own life, composed from a `Scene` and her running `StoryState`.

Skeleton of the contract (the real grammar replaces the body): `narrate` is pure and seeded, so a replay of
the same life gives the same words, and it returns the new story state (a book one chapter further on) that
the day machine saves with her day state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.life.scene import Scene


@dataclass(frozen=True)
class StoryState:
    """What her narration remembers between sentences (books, shows, skills, plants, storylines)."""

    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> StoryState:
        return cls(dict(raw or {}))


def narrate(scene: Scene, story: StoryState, seed: str) -> tuple[str | None, StoryState]:
    """One sentence for `scene` (None when there is nothing worth saying) and the story state after it."""
    return None, story
