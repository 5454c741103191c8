"""Friends on human clocks (issue 24 item 3, in part): a storyline's beats are weeks or months apart, a life-changing
ending (moving abroad) starts no new arc for that person, a household's storyline is lived once by both parents."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from engine.life import story
from engine.life.grammar import grammar
from engine.life.scene import Companion, Moment, Scene
from engine.life.world import world_day

ZONE = ZoneInfo("Asia/Shanghai")
START = dt.date(2026, 3, 2)
FRIEND = Companion("linlin", "琳琳", "friend")
MOM = Companion("mama", "妈妈", "mother")
DAD = Companion("baba", "爸爸", "father")


def _call(day: int, who: Companion) -> Scene:
    date = START + dt.timedelta(days=day)
    start = dt.datetime.combine(date, dt.time(20), ZONE)
    return Scene("call_friend", Moment.COMPLETED, start, start + dt.timedelta(minutes=30),
                 world_day(date, "杭州", "s"), with_whom=who)


def test_a_pregnancy_takes_months_not_days() -> None:
    baby = [{"key": "baby", "for": ["friend"], "topic": "宝宝", "gap_days": 70,
             "beats": ["怀孕了", "做了四维", "快生了", "宝宝出生了"]}]
    state: dict = {}
    days = [d for d in range(0, 400, 3) if story.advance_line(state, _call(d, FRIEND), FRIEND, baby).event]
    assert len(days) == 4
    assert all(b - a >= 70 for a, b in zip(days, days[1:], strict=False))


def test_the_shipped_storylines_are_paced_weeks_apart() -> None:
    lines = grammar().data["story"]["storyline"]
    assert all(int(line.get("gap_days", story.LINE_GAP_DAYS)) >= 7 for line in lines)
    baby = next(line for line in lines if "baby" in line["key"])
    assert int(baby["gap_days"]) * (len(baby["beats"]) - 1) >= 180


def test_after_moving_abroad_a_friend_starts_no_new_storyline() -> None:
    lines = [{"key": "abroad", "for": ["friend"], "topic": "出国", "gap_days": 7, "settles": True,
              "beats": ["在申请", "录取了", "出国了"]},
             {"key": "shop", "for": ["friend"], "topic": "开店", "beats": ["想开店", "开张了"]}]
    state: dict = {}
    order = story._line_order(FRIEND.id, 2)
    if lines[order[0]]["key"] != "abroad":
        lines = [lines[1], lines[0]]   # make abroad come first for this person
    events = [story.advance_line(state, _call(d, FRIEND), FRIEND, lines).event for d in range(0, 120, 7)]
    assert events.count("line_end") == 1 and state["lines"][FRIEND.id]["settled"] is True
    assert "line_new" not in events[events.index("line_end") + 1:]


def test_the_parents_kitchen_is_renovated_once() -> None:
    lines = [{"key": "kitchen", "for": ["mother", "father"], "topic": "装修", "shared": True, "gap_days": 7,
              "beats": ["要装修", "在装修", "装好了"]}]
    state: dict = {}
    told = [story.advance_line(state, _call(d, MOM), MOM, lines).event for d in range(0, 30, 7)]
    assert told.count("line_end") == 1
    assert all(story.advance_line(state, _call(d, DAD), DAD, lines).event is None for d in range(30, 120, 7))
    # and while one parent's is in progress, the other does not start it either
    state = {}
    assert story.advance_line(state, _call(0, DAD), DAD, lines).event == "line_new"
    assert story.advance_line(state, _call(1, MOM), MOM, lines).event is None
