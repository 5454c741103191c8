"""Her journal says one real thing about the day, and a letdown yesterday is tried again today (issue 24 item 6)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from engine.life.narrate import StoryState, narrate
from engine.life.scene import Moment, Outcome, Scene
from engine.life.world import world_day

ZONE = ZoneInfo("Asia/Shanghai")
DAY = dt.date(2026, 3, 14)   # a Saturday


def _scene(kind: str, date: dt.date, hour: float, minutes: int, outcome: Outcome = Outcome.DONE,
           cause: str = "") -> Scene:
    start = dt.datetime.combine(date, dt.time(0), ZONE) + dt.timedelta(hours=hour)
    return Scene(kind, Moment.COMPLETED, start, start + dt.timedelta(minutes=minutes), world_day(date, "杭州", "s"),
                 outcome=outcome, feeling_cause=cause, feeling="wronged" if cause else None, band="neg" if cause else None)


def test_a_letdown_becomes_her_note_and_the_journal_says_it() -> None:
    said = []
    for seed in (f"seed-{i}" for i in range(30)):
        _, story = narrate(_scene("bake", DAY, 14, 60, Outcome.DISAPPOINTED), StoryState(), seed)
        assert story.data["note"] == {"day": DAY.isoformat(), "kind": "bake", "text": "烤东西不太顺利", "letdown": True}
        text, _ = narrate(_scene("journal", DAY, 22, 30), story, seed)
        said.append(text or "")
    assert sum("烤东西不太顺利" in t for t in said) >= 10       # the journal usually says it
    assert not [t for t in said if "写着写着把心里的事理清楚了" in t]   # not the stock line on a day with a note


def test_a_named_cause_is_a_note_and_a_letdown_wins_over_it() -> None:
    _, story = narrate(_scene("work", DAY, 9, 240, cause="甲方又要改稿"), StoryState(), "s")
    assert story.data["note"]["text"] == "甲方又要改稿"
    _, story = narrate(_scene("walk", DAY, 18, 40, Outcome.DISAPPOINTED), story, "s")
    _, story = narrate(_scene("work", DAY, 19, 60, cause="甲方又要改稿"), story, "s")
    assert story.data["note"]["letdown"] is True
    _, story = narrate(_scene("work", DAY, 9, 240, cause="你家里人走了的事"), StoryState(), "s")
    assert story.data["note"]["text"] == "你家里人走了"


def test_yesterdays_letdown_is_tried_again_and_not_on_other_days() -> None:
    _, story = narrate(_scene("bake", DAY, 14, 60, Outcome.DISAPPOINTED), StoryState(), "s")
    tomorrow = DAY + dt.timedelta(days=1)
    texts = [narrate(_scene("bake", tomorrow, 14, 60), story, f"s{i}")[0] or "" for i in range(40)]
    assert any("昨天烤东西没弄好，今天再试一次" in t for t in texts)
    later = DAY + dt.timedelta(days=3)
    assert not any("昨天" in (narrate(_scene("bake", later, 14, 60), story, f"s{i}")[0] or "") for i in range(40))
    other = [narrate(_scene("drawing", tomorrow, 14, 60), story, f"s{i}")[0] or "" for i in range(40)]
    assert not any("再试一次" in t for t in other)
