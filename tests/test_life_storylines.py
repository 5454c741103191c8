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


# --- her own cast (issue 24 item 3) --------------------------------------------------------------------------


def test_each_companion_draws_her_own_friends_none_twice() -> None:
    from engine.life.cast import FAMILY, cast, cast_of

    def friends(key: str) -> set[str]:
        return {m.name for m in cast_of(key).values() if m.relation not in FAMILY}

    keys = [f"小安|{i * 86400.0}" for i in range(40)]
    for key in keys:
        names = [m.name for m in cast_of(key).values()]
        assert len(names) == len(set(names)) == len(cast())
        assert {m.name for m in cast_of(key).values() if m.relation in FAMILY} == {"妈妈", "爸爸"}
    shares = [len(friends(a) & friends(b)) / len(friends(a)) for a, b in zip(keys, keys[1:], strict=False)]
    assert sum(shares) / len(shares) < 0.3
    assert len({frozenset(friends(k)) for k in keys}) == len(keys)
    # her interval with each is her own, around the file's
    every = {cast_of(k)["linlin"].meet_every_days for k in keys}
    assert len(every) > 30 and all(0.75 * 9 <= e <= 1.35 * 9 for e in every)


def test_two_companions_live_a_friends_storylines_in_different_orders() -> None:
    lines = grammar().data["story"]["storyline"]
    fitting = [x for x in lines if "friend" in x["for"]]
    firsts = {fitting[story._line_order("linlin", len(fitting), f"key{i}")[0]]["key"] for i in range(30)}
    assert len(firsts) >= 5
    assert story._line_order("linlin", 9, "a") == story._line_order("linlin", 9, "a")


def test_a_friend_settled_abroad_is_called_never_met() -> None:
    from engine.life.cast import cast_of, overdue

    now = 1_750_000_000.0
    met = {m: now - 200 * 86400 for m in cast_of("k")}
    near = [m.id for m, _ in overdue(met, now, lives="same_city", seed_key="k")]
    assert "linlin" in near
    away = story.away_ids({"lines": {"linlin": {"settled": True, "done": ["abroad"]}}})
    assert away == {"linlin"}
    assert "linlin" not in [m.id for m, _ in overdue(met, now, lives="same_city", seed_key="k", away=away)]
    assert "linlin" in [m.id for m, _ in overdue(met, now, lives="hometown", seed_key="k", away=away)]


def test_a_baby_changes_later_meetings_and_rules_out_what_a_new_mother_would_not_start() -> None:
    lines = [{"key": "baby", "for": ["friend"], "topic": "宝宝", "gap_days": 7, "blocks": ["dating"],
              "beats": ["怀孕了", "宝宝出生了"], "after": ["{name}说宝宝会翻身了"]},
             {"key": "dating", "for": ["friend"], "topic": "相亲", "beats": ["去相亲了", "在一起了"]}]
    seed = next(s for s in (f"s{i}" for i in range(50)) if story._line_order(FRIEND.id, 2, s)[0] == 0)
    state: dict = {}
    told = [story.advance_line(state, _call(d, FRIEND), FRIEND, lines, seed) for d in range(0, 200, 7)]
    events = [t.event for t in told]
    assert events[:2] == ["line_new", "line_end"]
    assert "line_new" not in events[2:]              # no blind date after the baby
    after = [t for t in told if t.event == "line_after"]
    assert after and all(t.slots["news"] == "琳琳说宝宝会翻身了" for t in after)
    # and without the mark, the other storyline would have started
    state = {}
    plain = [{**lines[0], "blocks": []}, lines[1]]
    events = [story.advance_line(state, _call(d, FRIEND), FRIEND, plain, seed).event for d in range(0, 200, 7)]
    assert events.count("line_new") == 2


def test_the_shipped_baby_storyline_leaves_a_mark_and_blocks() -> None:
    baby = next(x for x in grammar().data["story"]["storyline"] if x["key"] == "cousin_baby")
    assert baby["after"] and "dating" in baby["blocks"] and "abroad" in baby["blocks"]
