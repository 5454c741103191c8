"""What one finished (or interrupted) activity was, as narration reads it: the contract between her day and her words.

The day machine (engine/life/machine.py) builds a `Scene` when an activity ends, is
interrupted or resumes; engine/life/narrate.py turns it and her running `StoryState` into one sentence. Keeping
the contract in its own module lets either side change without reading the other.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum

from engine.life.world import WorldDay


class Outcome(StrEnum):
    """How it went: outcomes can disappoint (rain on the walk, a friend cancels, the bread fails)."""

    DONE = "done"
    DISAPPOINTED = "disappointed"


class Moment(StrEnum):
    """Which sentence is wanted: the activity finished, resumed after a chat, or given up after one."""

    COMPLETED = "completed"
    RESUMED = "resumed"
    ABANDONED = "abandoned"


@dataclass(frozen=True)
class Companion:
    """Someone from her cast she did it with (engine/data/cast.toml)."""

    id: str
    name: str
    relation: str  # friend | mother | father | colleague | ...


@dataclass(frozen=True)
class Scene:
    """One activity as it is narrated. Times are her local, timezone-aware clock."""

    kind: str  # activity catalogue key (engine/data/activities.toml)
    moment: Moment
    started: dt.datetime
    ended: dt.datetime  # when it ended, or when the chat interrupted it
    world: WorldDay  # the world of the local date it ended on
    outcome: Outcome = Outcome.DONE
    with_whom: Companion | None = None
    place: str | None = None  # 家 / 公司 / 公园 ... when the machine knows it
    valence: float = 0.0  # her mood when it ended (-1..1): colours the wording, never decides the facts
    remaining_s: float = 0.0  # for RESUMED: how long she still means to go on
    # Issue 24: the band her words take (pos / flat / neg; None: from valence alone), her strongest named
    # feeling (engine/data/feelings.toml key) and its cause as she thinks of it ("你家里人走了的事").
    band: str | None = None
    feeling: str | None = None
    feeling_cause: str = ""
    dined: bool = False  # her dinner is already eaten today (no second dinner in her words, issue 24)
    cooked: bool = False  # she cooked a dish shortly before this meal: the meal is that dish
    anchor: str | None = None  # the fixed point of her day it was (engine/life/week.py Anchor.key), if any
    role: str = "illustrator"  # what she does for work (engine/life/data/roles.toml id): the words of her workday
    # Issue 24 item 5: the day of a cold she has (first / on / last, '' without: engine/life/illness.py) and
    # whether she left without breakfast this morning (said on the way to work)
    sick: str = ""
    skipped: bool = False

    @property
    def minutes(self) -> int:
        """Its real duration in whole minutes: every number in the sentence derives from this."""
        return max(1, round((self.ended - self.started).total_seconds() / 60))
