"""What a day-machine transition asks to be written: frozen effects that engine/life/record.py applies in order.

engine/life/machine.py decides and returns them with the new `LifeState`; nothing here touches a connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EndActivity:
    activity_id: int
    status: str
    at: float
    detail: dict[str, Any]


@dataclass(frozen=True)
class CloseSuspended:
    activity_id: int
    status: str
    detail: dict[str, Any]


@dataclass(frozen=True)
class LifeEvent:
    text: str
    at: float
    kind: str                 # completed | resumed | abandoned
    activity_id: int | None


@dataclass(frozen=True)
class MoodPush:
    source: str
    delta: tuple[float, float, float]


@dataclass(frozen=True)
class StartActivity:
    kind: str
    label: str
    started_at: float
    expected_end: float
    why: str
    next_kind: str | None
    detail: dict[str, Any]


Effect = EndActivity | CloseSuspended | LifeEvent | MoodPush | StartActivity
