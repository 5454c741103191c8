"""Her sentences about her own life, composed from a `Scene` and her running `StoryState`.

`narrate` is pure and seeded: the same scene, story and seed give the same words, so a replay of the same life
writes the same events. It works in three steps: the story moves on (engine/life/story.py: a book a few pages
further, a friend's news), the scene becomes facts and slots (what time of day it is against the sun, the weather,
the numbers derived from the real minutes), and the grammar (engine/life/grammar.py) composes one sentence whose
every clause is eligible for those facts. The new story state is returned for the day machine to save.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import hashlib
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.errors import InputError
from engine.life import story as st
from engine.life.grammar import expand, grammar, sentence
from engine.life.place import city
from engine.life.scene import Moment, Outcome, Scene
from engine.life.season import sights
from engine.life.trip import place_on_trip
from engine.life.week import role
from engine.life.wording import cn_count, cn_decimal_half, cn_number, duration_phrase

SILENT_KINDS = frozenset({"chat"})  # the chat itself is the user's memory, not a life event
WALK_STEPS_PER_MIN = (95, 112)  # an ordinary walking cadence
WALK_KMH = (4.2, 5.2)  # a stroll, slower than a brisk 5.5
RUN_KMH = (7.5, 9.5)  # an easy jog
RESUME_AT_LEAST_MIN = 1
# Issue 24: how often a sentence with no named feeling in a flat band may end on a stock tail ("日子就是这样");
# a rare choice, not the default (they were half of all sentences).
FLAT_TAIL_CHANCE = 0.1
POS_PLAIN_CHANCE = 0.35
EXCLAIM_CHANCE = 0.35
PLAY_KINDS = frozenset({"outing", "meet_friend", "shopping", "movie", "cafe", "walk", "family_visit", "festival"})     # of glad sentences that end on her glad words
# A sentence that carries someone else's news or a milestone of hers (a storyline beat, a finished book) takes
# no low stock tail: 「小雨说报了驾校，准备考驾照，心里空落落的」 does not fit (issue 24). Only a feeling with a
# cause she names (what the user told her) is said beside such news.
NEWS_EVENTS = frozenset({"line_new", "line_next", "line_end", "line_after", "finished", "delivered", "smooth",
                         "grew", "ended", "new", "phase", "fest", "moon", "trip_go", "trip_spot", "trip_meal",
                         "trip_back"})   # likewise the plain glad words (心情挺好 …): not at the end of every sentence of a good day
# How often a low moment says how she feels (else the sentence may go without), and how often a feeling whose cause
# the user told her is said with that cause: she thinks of it through the day, not in every sentence.
LOW_SAYS_FEELING = 0.6
DWELL_CHANCE = 0.3
# Where a sunset is seen: from half an hour before the sun goes down to a little after.
GLOW_BEFORE = dt.timedelta(minutes=30)
# How she gets to work, by where she is on the way (engine/life/data/roles.toml commute_place).
COMMUTE_WAYS = {"地铁上": "坐地铁", "公交上": "坐公交", "骑车路上": "骑车"}
GLOW_AFTER = dt.timedelta(minutes=25)
# Every slot a clause may name besides the [words] pools: from the scene, the world and the story (story.py).
SLOT_NAMES = frozenset({
    "dur", "remaining", "festival", "new_year", "place", "who", "verb", "high", "low", "steps", "km", "run_km",
    "sight_line", "fruit", "festival_food",
    "book", "pages", "next_book", "chapter", "again", "show", "eps", "many_eps", "next_show", "ep", "film", "piece", "next_piece",
    "stage", "course", "next_course", "lesson", "page_no", "project", "next_project", "phase", "plant", "growth",
    "next_plant", "look", "name", "news", "topic", "cause", "note", "trip_city", "trip_food", "spot", "temp_now",
    "workplace", "work_doing", "work_bad", "commute_way",   # her role's workday (engine/life/data/roles.toml)
})
# Issue 24 item 4: a minor festival is lived as one fitting act, said once (腊八粥 for dinner, 粽子 at lunch, a call
# home on 重阳), not a prefix on every sentence; the act's words are its kind's `fest` clauses.
FESTIVAL_ACTS = {"腊八节": "dinner", "元宵节": "dinner", "端午节": "lunch", "七夕节": "dinner", "重阳节": "call_friend",
                 "冬至": "dinner"}
OVERTIME_FROM_H = 18.5   # her studio day ends at 18:00; from half past, she stayed late
DEADLINE_SHARE = 0.7     # of her project's hours done: its deadline is near (engine/life/week.py CRUNCH_LATE)
# What a place on a golden-week trip makes of an activity there (engine/life/trip.py): the story event whose
# clauses say it (the train there and back, a sight, a meal at a local eatery).
TRIP_EVENTS = {("commute", "go"): "trip_go", ("commute", "back"): "trip_back", ("outing", "spot"): "trip_spot",
               ("lunch", "meal"): "trip_meal", ("dinner", "meal"): "trip_meal", ("breakfast", "meal"): "trip_meal"}
FAMILY_WORDS = {"mother": "妈妈", "father": "爸爸"}  # a daughter says 妈妈, not her mother's name


@dataclass(frozen=True)
class StoryState:
    """What her narration remembers between sentences (books, shows, skills, plants, storylines, her project).

    JSON-shaped (dicts, lists, strings, numbers) so the day machine can save it with her day state as it is.
    """

    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.data)

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> StoryState:
        """The state saved by to_dict; a wrong shape is an InputError naming the key (unknown keys are kept)."""
        return cls.adopt(copy.deepcopy(raw))

    @classmethod
    def adopt(cls, raw: dict[str, Any] | None) -> StoryState:
        """Like from_dict, without the copy: for the day machine, whose saved state is never changed in place
        (a frozen LifeState; narrate and story.py copy before they write), so a sentence costs no deep copy."""
        if raw is not None and not isinstance(raw, dict):
            raise InputError(f"story state must be a JSON object, got {type(raw).__name__}")
        data = raw or {}
        for key, value in data.items():
            wanted = _STATE_SHAPES.get(key)
            if wanted is not None and (not isinstance(value, wanted) or isinstance(value, bool)):
                raise InputError(f"story state {key!r} must be a JSON {_SHAPE_NAMES[wanted]}, got {value!r}; "
                                 "drop the key to start that story afresh")
        return cls(data)


# The shape of each key story.py writes; from_dict checks saved state against it.
_STATE_SHAPES: dict[str, type] = {"book": dict, "show": dict, "film": int, "skills": dict, "course": dict,
                                  "journal_page": int, "project": dict, "plant": dict, "lines": dict, "note": dict}
_SHAPE_NAMES = {dict: "object", int: "integer"}


def _rng(seed: str, scene: Scene) -> random.Random:
    key = "|".join((seed, scene.kind, scene.moment.value, scene.outcome.value, scene.started.isoformat(),
                    scene.ended.isoformat()))
    return random.Random(int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big"))


def _phase(scene: Scene) -> str:
    """The part of her day the scene ended in, read against today's sun, not a fixed clock."""
    end, world = scene.ended, scene.world
    hour = end.hour + end.minute / 60
    if hour < 4 or hour >= 23:
        return "late"
    if end < world.dawn:
        return "before_dawn"
    if end < world.sunrise + dt.timedelta(minutes=90):
        return "early"
    if hour < 11:
        return "morning"
    if hour < 13.5:
        return "noon"
    if end < world.sunset - dt.timedelta(minutes=45):
        return "afternoon"
    if end < world.dusk + dt.timedelta(minutes=30):
        return "dusk"
    return "evening"


def _band(scene: Scene) -> str:
    """Which feelings fit: a disappointment or a low mood never sounds glad, a glad mood never sounds low."""
    if scene.outcome is not Outcome.DISAPPOINTED and scene.band in ("pos", "flat", "neg"):
        return scene.band
    if scene.outcome is Outcome.DISAPPOINTED or scene.valence <= -0.25:
        return "neg"
    if scene.valence >= 0.25:
        return "pos"
    return "flat"


RAIN_STATES = ("小雨", "大雨")
NO_RAIN_NOW = "雨停"
RAIN_START_H = (5, 15)     # a rainy day's rain starts in this hour range (seeded per date) ...
RAIN_HOURS = (4, 10)       # ... and lasts this many hours; outside it the sky is overcast (issue 24: no rain that
                           # never stops from 07:00 to midnight)


def rain_window(date: dt.date, weather: str) -> tuple[float, float] | None:
    """The local hours (from, to) it rains on a rainy `date`, seeded by the date; None on a dry day."""
    if weather not in RAIN_STATES:
        return None
    digest = hashlib.sha256(f"rain|{date.isoformat()}".encode()).digest()
    start = RAIN_START_H[0] + digest[0] % (RAIN_START_H[1] - RAIN_START_H[0] + 1)
    hours = RAIN_HOURS[0] + digest[1] % (RAIN_HOURS[1] - RAIN_HOURS[0] + 1)
    return float(start), float(start + hours)


def weather_at(world: Any, moment: dt.datetime) -> str:
    """The weather of the scene's moment: the day's state, or "雨停" (no weather word fits) before and after a
    rainy day's rain."""
    window = rain_window(world.date, world.weather)
    if window is None:
        return str(world.weather)
    hour = moment.hour + moment.minute / 60 + (24 if moment.date() > world.date else 0)
    return str(world.weather) if window[0] <= hour < window[1] else NO_RAIN_NOW


def rain_turn(world: Any, moment: dt.datetime) -> str:
    """On a rainy day, where the moment sits against its rain (issue 24 item 5: weather changes within a day):
    "coming" in the hour before it starts, "over" in the three hours after it stops, else ""."""
    window = rain_window(world.date, world.weather)
    if window is None:
        return ""
    hour = moment.hour + moment.minute / 60 + (24 if moment.date() > world.date else 0)
    if window[0] - 1.0 <= hour < window[0]:
        return "coming"
    if window[1] <= hour < window[1] + 3.0:
        return "over"
    return ""


def home_call(scene: Scene) -> bool:
    """A festival call home (中秋, 清明, and 除夕 abroad; engine/life/week.py festival_anchors): to her parents."""
    if scene.world.festival == "除夕":   # abroad: the one video call home of the evening, not any call with mum
        return scene.kind == "call_friend" and scene.anchor == "call_home"
    return (scene.kind == "call_friend" and scene.with_whom is not None
            and scene.with_whom.relation in FAMILY_WORDS and scene.world.festival in ("中秋节", "清明节", "重阳节"))


DIURNAL_MIN_H, DIURNAL_MAX_H = 6.0, 14.5   # the coolest hour near sunrise, the warmest mid-afternoon


def temp_at(world: Any, moment: dt.datetime) -> float:
    """The temperature of the hour (issue 24 item 5): the day's low near dawn rising to its high at 14:30, then
    falling through the evening and night (a cosine between the two)."""
    hour = moment.hour + moment.minute / 60 + (24 if moment.date() > world.date else 0)
    low, high = float(world.temp_low_c), float(world.temp_high_c)
    if DIURNAL_MIN_H <= hour <= DIURNAL_MAX_H:
        share = 0.5 - 0.5 * math.cos(math.pi * (hour - DIURNAL_MIN_H) / (DIURNAL_MAX_H - DIURNAL_MIN_H))
    else:
        since = (hour - DIURNAL_MAX_H) % 24
        share = 0.5 + 0.5 * math.cos(math.pi * since / (24 - (DIURNAL_MAX_H - DIURNAL_MIN_H)))
    return low + (high - low) * share


def facts_of(scene: Scene, outdoor: bool) -> dict[str, Any]:
    """The facts the grammar's conditions read (engine/life/grammar.py CONDITIONS)."""
    world = scene.world
    sky = world.weather in ("晴", "多云")
    glow = sky and scene.started <= world.sunset + GLOW_AFTER and scene.ended >= world.sunset - GLOW_BEFORE
    work = role(scene.role)
    return {
        "outdoor": outdoor,
        "weather": weather_at(world, scene.ended),
        "rain_turn": rain_turn(world, scene.ended),
        "temp_low": world.temp_low_c,
        "temp_high": world.temp_high_c,
        "phase": _phase(scene),
        "glow": glow,
        "dark": scene.ended > world.dusk or scene.ended < world.dawn,
        "light": world.sunrise <= scene.ended <= world.sunset,
        "woke_light": world.dawn <= scene.ended <= world.dusk,
        "day_off": world.is_day_off,
        "festival": world.festival,
        "spring_festival": world.spring_festival,
        "with_whom": scene.with_whom,
        "minutes": scene.minutes,
        "band": _band(scene),
        "going": scene.ended.hour < 12,
        "place": scene.place,
        "feeling": scene.feeling,
        "dined": scene.dined,
        "cooked": scene.cooked,
        "before_supper": 4 <= scene.ended.hour < 16,
        "home_call": home_call(scene),
        # at her parents' for the Spring Festival: a meal with them, or their home or relatives' (issue 24)
        "at_parents": scene.place in ("老家", "亲戚家") or (
            scene.with_whom is not None and scene.with_whom.relation in FAMILY_WORDS
            and scene.kind in ("breakfast", "lunch", "dinner")),
        "user_cause": scene.feeling_cause.startswith("你"),
        # her role's workday (issue 24 item 7): a teacher goes to 学校 by bus, not to 工作室 by metro
        "draws": work.draws,
        "studio": work.place == "工作室",
        "metro": (scene.place if scene.kind == "commute" and scene.place else work.commute_place) == "地铁上",
        "riding": (scene.place if scene.kind == "commute" and scene.place else work.commute_place) == "骑车路上",
        "job": work.work_kind == "work",
        "abroad": city(world.city).abroad,
        "trip": place_on_trip(scene.place) is not None,
        # issue 24 item 5: she stayed at the studio past 18:30; she went home after that; a cold; no breakfast
        "overtime": scene.kind == "work" and scene.place == "工作室" and _clock(scene.ended) >= OVERTIME_FROM_H,
        "late_home": scene.kind == "commute" and scene.ended.hour >= 12 and _clock(scene.started) >= OVERTIME_FROM_H,
        "sick": scene.sick,
        "skipped": scene.skipped,
        "play": scene.kind in PLAY_KINDS,
        # the hour's own temperature is said only when it is not the day's low at midday (engine/life/slips.py)
        "temp_now_ok": not (10 <= scene.ended.hour < 17 and round(temp_at(world, scene.ended)) == round(
            world.temp_low_c)),
        "temp_now_c": temp_at(world, scene.ended),
        "minor_festival": world.festival in FESTIVAL_ACTS,
    }


def _degrees(celsius: float) -> str:
    value = round(celsius)
    return ("零下" if value < 0 else "") + cn_count(abs(value), "度")  # 两度, 十二度


class _Slots(dict[str, str]):
    """Slot values, some computed only when a chosen clause uses them (word pools, steps, kilometres).

    Computing lazily keeps a sentence cheap (a simulated year narrates thousands of scenes); the draws still come
    from the scene's own seeded rng in the order the clauses use them, so the words stay reproducible. A value
    set in the dict wins, then a `lazy` one, then a draw from a word pool of `words`.
    """

    def __init__(self, base: dict[str, str], lazy: Mapping[str, Callable[[], str]],
                 words: Mapping[str, tuple[str, ...]], rng: random.Random) -> None:
        super().__init__(base)
        self._lazy = lazy
        self._words = words
        self._rng = rng

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self._lazy or name in self._words

    def __missing__(self, name: str) -> str:
        if name in self._lazy:
            value = self[name] = self._lazy[name]()
        elif name in self._words:
            value = self[name] = self._rng.choice(self._words[name])
        else:
            raise KeyError(name)
        return value


def _base_slots(scene: Scene, rng: random.Random) -> _Slots:
    """Numbers derived from the real duration and the world's own words (today's sights, festival, temperatures)."""
    world = scene.world
    g = grammar()
    minutes = scene.minutes
    slots = {"dur": duration_phrase(minutes)}
    if scene.moment is Moment.RESUMED:
        slots["remaining"] = duration_phrase(max(RESUME_AT_LEAST_MIN, round(scene.remaining_s / 60)))
    numbers: dict[str, Callable[[], str]] = {
        "high": lambda: _degrees(world.temp_high_c),
        "low": lambda: _degrees(world.temp_low_c),
        "temp_now": lambda: _degrees(temp_at(world, scene.ended)),
        "steps": lambda: cn_number(max(100, 100 * round(minutes * rng.uniform(*WALK_STEPS_PER_MIN) / 100))) + "步",
        "km": lambda: cn_decimal_half(minutes / 60 * rng.uniform(*WALK_KMH), "公里"),
        "run_km": lambda: cn_decimal_half(minutes / 60 * rng.uniform(*RUN_KMH), "公里"),
    }
    # A word pool of the same name as a number wins over it; the world's own slots below win over a pool.
    lazy = {name: value for name, value in numbers.items() if name not in g.words}
    if world.sights:
        known = sights()
        lazy["sight_line"] = lambda: _sight_line(rng, world.sights, known)
        fruits = [name for name in world.sights if known[name].kind == "fruit"]
        if fruits:
            lazy["fruit"] = functools.partial(rng.choice, fruits)
    festival = world.festival or ("春节" if world.spring_festival else None)
    if festival:
        slots["festival"] = festival
        foods = g.data.get("festival_food", {}).get(festival)
        if foods:
            lazy["festival_food"] = functools.partial(rng.choice, foods)
    if world.spring_festival:
        slots["new_year"] = "过年"
    if scene.place:
        slots["place"] = scene.place
        on_trip = place_on_trip(scene.place)
        if on_trip is not None:
            trip, what = on_trip
            slots["trip_city"] = trip.city
            lazy["trip_food"] = functools.partial(rng.choice, trip.food)
            if what == "spot":
                slots["spot"] = scene.place
    work = role(scene.role)
    if not work.draws:   # the words of her working day (engine/life/data/roles.toml)
        slots["workplace"] = work.place
        if work.doing:
            lazy["work_doing"] = functools.partial(rng.choice, work.doing)
        if work.bad_day:
            lazy["work_bad"] = functools.partial(rng.choice, work.bad_day)
    if scene.kind == "commute":
        slots["commute_way"] = COMMUTE_WAYS.get(scene.place or work.commute_place, "路上")
    home = city(world.city)
    if home.spots:   # her city's own places to go out to (no 西湖边 in 纽约)
        lazy["spot"] = functools.partial(rng.choice, home.spots)
    for name, pool in home.words:   # and its own words for a pool (a bagel for breakfast in 纽约)
        lazy[name] = functools.partial(rng.choice, pool)
    if scene.feeling_cause and scene.kind != "journal":   # the journal says it as her note of the day
        slots["cause"] = scene.feeling_cause
    who = scene.with_whom
    if who is not None:
        slots["who"] = FAMILY_WORDS.get(who.relation, who.name)
    return _Slots(slots, lazy, g.words, rng)


def _sight_line(rng: random.Random, out_today: tuple[str, ...], known: Mapping[str, Any]) -> str:
    """A clause about one of today's sights, worded for its kind (a flower opens, fruit is on sale)."""
    name = rng.choice(out_today)
    lines = grammar().sight_lines[known[name].kind]
    return rng.choice(lines).text.replace("{sight}", name)


@functools.lru_cache(maxsize=256)
def own_order(seed: str, table: str, size: int) -> tuple[int, ...]:
    """Her own order of a story table (books, shows, films, courses, projects, pieces), seeded by who she is, so two
    companions read, watch and make different things (issue 24: a second chart had the same books in the same order)."""
    order = list(range(size))
    random.Random(int.from_bytes(hashlib.sha256(f"{seed}|order|{table}".encode()).digest()[:8], "big")).shuffle(order)
    return tuple(order)


def _ordered(seed: str, table: str, items: Any) -> list[Any]:
    return [items[i] for i in own_order(seed, table, len(items))]


def _advance(data: dict[str, Any], scene: Scene, rng: random.Random, who_word: str | None,
             seed: str = "") -> st.Told:
    """Move the story on for the scene's kind (a no-op Told for kinds with nothing in progress)."""
    tables = grammar().data["story"]
    kind = scene.kind
    if kind == "reading":
        return st.advance_book(data, scene, rng, _ordered(seed, "book", tables["book"]))
    if kind == "drama":
        return st.advance_show(data, scene, _ordered(seed, "show", tables["show"]))
    if kind == "movie":
        return st.advance_film(data, _ordered(seed, "films", tables["films"]))
    if kind in ("music", "drawing", "bake"):
        track = tables["skill"][kind]
        return st.advance_skill(data, kind, scene, _ordered(seed, kind, track["items"]), track["stages"])
    if kind == "study":
        return st.advance_course(data, scene, _ordered(seed, "course", tables["course"]))
    if kind == "journal":
        return st.advance_journal(data, scene, int(tables["notebook_pages"]))
    if kind == "work" and role(scene.role).draws:   # only drawing work has illustration projects
        return st.advance_project(data, scene, _ordered(seed, "project", tables["project"]))
    if kind == "plants":
        return st.advance_plant(data, scene, tables["plant"])
    if kind in ("call_friend", "meet_friend", "family_visit", "festival") and scene.with_whom is not None \
            and not home_call(scene):   # a festival call home is about the festival, not a friend's news
        who = scene.with_whom
        shown = type(who)(id=who.id, name=who_word or who.name, relation=who.relation)
        return st.advance_line(data, scene, shown, tables["storyline"], seed)
    return st.Told()


def narrate(scene: Scene, story: StoryState, seed: str, avoid_tail: str | None = None
            ) -> tuple[str | None, StoryState]:
    """One sentence for `scene` (None when there is nothing worth saying) and the story state after it.

    `avoid_tail`: the clause her previous sentence ended on (tail_of); no feeling clause repeats it at once.
    """
    g = grammar()
    if scene.started.utcoffset() is None or scene.ended.utcoffset() is None:
        raise InputError(f"scene {scene.kind!r} times must be timezone-aware, got {scene.started.isoformat()}")
    if scene.ended < scene.started:
        raise InputError(f"scene {scene.kind!r} ends ({scene.ended.isoformat()}) before it starts "
                         f"({scene.started.isoformat()})")
    if scene.kind not in g.kinds:
        if scene.kind in SILENT_KINDS:
            return None, story
        raise InputError(f"narration has no words for activity kind {scene.kind!r}; known: {', '.join(sorted(g.kinds))}")
    rng = _rng(seed, scene)
    data = dict(story.data)  # story.py replaces what it changes and never mutates nested values in place
    slots = _base_slots(scene, rng)
    slots["verb"] = g.kinds[scene.kind].verb
    told = _advance(data, scene, rng, slots.get("who"), seed)
    slots.update(told.slots)
    outdoor = bool(g.data["kind"][scene.kind].get("outdoor", False))
    facts = facts_of(scene, outdoor)
    event = told.event
    day = _her_day(scene).isoformat()
    facts["fest_said"] = data.get("fest_said") == day
    if event is None and scene.moment is Moment.COMPLETED and scene.outcome is Outcome.DONE:
        event = _occasion(scene, facts)
    _read_note(data, scene, facts, slots)
    facts["tail"] = rng.random() < FLAT_TAIL_CHANCE
    facts["pos_say"] = rng.random() < POS_PLAIN_CHANCE
    # waking is when what she was told comes back first: that sentence always says it
    waking = scene.kind == "sleep"
    facts["dwell"] = rng.random() < DWELL_CHANCE or waking
    says_feeling = rng.random() < LOW_SAYS_FEELING or waking
    if event in NEWS_EVENTS and facts["band"] == "neg" and not scene.feeling_cause \
            and scene.outcome is not Outcome.DISAPPOINTED:
        facts["band"], says_feeling = "flat", False   # the news is the sentence; no low tail that does not fit it
    facts["good_news"] = event == "line_end"
    facts["worry_news"] = bool(told.slots.get("worry")) and event in ("line_new", "line_next")
    if facts["worry_news"] and not scene.feeling_cause:
        # her words answer the worrying news (with concern), not a glad or low feeling of her own
        facts["feeling"], facts["band"], says_feeling = None, "flat", True
    moment = {Moment.RESUMED: "resumed", Moment.ABANDONED: "abandoned"}.get(scene.moment)
    if moment is None:
        moment = "disappointed" if scene.outcome is Outcome.DISAPPOINTED else "done"
    # a low moment says how she feels (issue 24: her lowest days read like every day when the feeling is optional)
    wanted = frozenset({"feeling"}) if (facts["band"] == "neg" or facts["worry_news"]) and says_feeling else frozenset()
    clauses = expand(rng, scene.kind, moment, facts, slots, event, wanted,
                     frozenset({avoid_tail}) if avoid_tail else frozenset())
    _take_note(data, scene, moment, slots.get("verb", ""))
    if clauses is not None and world_festival_said(scene, clauses) and data.get("fest_said") != day:
        data["fest_said"] = day   # the festival is named once a day (issue 24: 「今天是腊八节，」 on 6 of 16)
    after = _story_after(story, data)
    if clauses is None:  # the data file promises a core clause for every kind and moment (tested); keep the story
        return None, after
    # "！" only where the sentence earns it: a glad moment that ends on her glad words (issue 24: not on
    # 「和琳琳打了二十五分钟电话！」)
    glad = facts["band"] == "pos" and moment == "done" and glad_tail(clauses[-1]) and rng.random() < EXCLAIM_CHANCE
    return sentence(clauses, exclaim=glad), after


@functools.cache
def _glad_patterns() -> tuple[re.Pattern[str], ...]:
    """Her glad words: every feeling clause (shared or a kind's own) said only in a glad band or of a glad
    feeling, as a pattern (a {slot} matches any words)."""
    g = grammar()
    glad = {"pos", "good_news", *(f"f_{name}" for name in ("glad", "warm", "content", "lively", "hopeful", "relieved"))}
    alts = [*g.common.get("feeling", ()), *(a for k in g.kinds.values() for key, v in k.clauses.items()
                                            if key.split(".")[0] == "feeling" for a in v)]
    # the plain glad words of a good mood (心情挺好 …, drawn by pos_say) say it quietly: a 「！」 is for a feeling
    # with something behind it (a call, an outing, a story she loves)
    return tuple(re.compile("".join(".+" if part.startswith("{") else re.escape(part)
                                    for part in re.split(r"(\{[a-z_]+\})", alt.text)) + "$")
                 for alt in alts if glad & set(alt.conditions) and "pos_say" not in alt.conditions)


def glad_tail(clause: str) -> bool:
    """Whether a clause is one of her glad feeling clauses (the only place a 「！」 is earned)."""
    return any(p.match(clause) for p in _glad_patterns())


def _routine_event(scene: Scene, facts: Mapping[str, Any]) -> str | None:
    """What of a less ideal routine this sentence must say (issue 24 item 5): a cold on waking, a 午休 at her desk,
    leaving without breakfast, staying late before a deadline."""
    if scene.kind == "sleep" and scene.sick:
        return "sick"
    if scene.kind == "nap" and scene.place == "工位":
        return "desk"
    if scene.kind == "commute" and scene.skipped:
        return "skipped"
    if facts["overtime"]:
        return "overtime"
    return None


def world_festival_said(scene: Scene, clauses: list[str]) -> bool:
    """Whether the sentence names today's festival (by name, or 腊八/端午 … without 节)."""
    name = scene.world.festival
    return name is not None and any(name.removesuffix("节") in c for c in clauses)


def _clock(moment: dt.datetime) -> float:
    return moment.hour + moment.minute / 60


def deadline_near(story: Mapping[str, Any], seed: str) -> bool:
    """Whether her studio project is nearly due (DEADLINE_SHARE of its hours done): the days she works late."""
    cur = story.get("project")
    if not isinstance(cur, dict):
        return False
    projects = _ordered(seed, "project", grammar().data["story"]["project"])
    project = projects[int(cur.get("index", 0)) % len(projects)]
    return float(cur.get("work_min", 0)) >= DEADLINE_SHARE * float(project["hours"]) * 60


def _occasion(scene: Scene, facts: Mapping[str, Any]) -> str | None:
    """The event a completed activity is an occasion for: a sight, a meal or the train of a golden-week trip, or
    today's minor festival lived in its one act (the dinner of 腊八粥, the lunch of 粽子, the call home on 重阳)."""
    on_trip = place_on_trip(scene.place)
    if on_trip is not None:
        return TRIP_EVENTS.get((scene.kind, on_trip[1]))
    routine = _routine_event(scene, facts)
    if routine is not None:
        return routine
    festival = scene.world.festival
    if festival == "中秋节" and scene.kind == "festival" and facts["at_parents"]:
        return "moon"   # 中秋 at her parents' in the golden week: the evening with 月饼 and the moon
    if festival in FESTIVAL_ACTS and FESTIVAL_ACTS[festival] == scene.kind and not facts["at_parents"] \
            and not facts["fest_said"] and (scene.kind != "call_friend" or facts["home_call"]):
        return "fest"
    return None


def _her_day(scene: Scene) -> dt.date:
    return (scene.ended - dt.timedelta(hours=4)).date()   # her day turns at 04:00


def _read_note(data: dict[str, Any], scene: Scene, facts: dict[str, Any], slots: dict[str, str]) -> None:
    """Her note of the day (issue 24 item 6): the journal says it; a letdown yesterday is tried again today."""
    note = data.get("note")
    facts["noted"] = facts["retry"] = False
    if not isinstance(note, dict) or "day" not in note:
        return
    day = _her_day(scene)
    if note["day"] == day.isoformat():
        slots["note"] = str(note["text"])
        facts["noted"] = True
    elif (note["day"] == (day - dt.timedelta(days=1)).isoformat() and note.get("kind") == scene.kind
          and note.get("letdown") and scene.outcome is not Outcome.DISAPPOINTED):
        facts["retry"] = True


def _take_note(data: dict[str, Any], scene: Scene, moment: str, verb: str) -> None:
    """What of this scene is worth her journal: a letdown (kept over anything else that day), else a cause she
    names (a client's revisions, what the user told her)."""
    day = _her_day(scene).isoformat()
    note = data.get("note")
    today_letdown = isinstance(note, dict) and note.get("day") == day and note.get("letdown")
    if moment == "disappointed" and verb:
        data["note"] = {"day": day, "kind": scene.kind, "text": f"{verb}不太顺利", "letdown": True}
    elif scene.feeling_cause and not today_letdown and scene.kind != "journal":
        cause = scene.feeling_cause.removesuffix("的事")
        if not (isinstance(note, dict) and note.get("day") == day and note.get("text") == cause):
            data["note"] = {"day": day, "kind": scene.kind, "text": cause, "letdown": False}


def tail_of(text: str | None) -> str | None:
    """The last clause of a sentence (what the next sentence's feeling should not repeat)."""
    if not text:
        return None
    return text.rstrip("。！").split("，")[-1] or None


def _story_after(story: StoryState, data: dict[str, Any]) -> StoryState:
    """The story state after a sentence: `story` itself when nothing was replaced in its copy `data`.

    story.py replaces what it changes (never mutates in place), so an unchanged story is the same values by
    identity; handing back the same object lets the day machine's save skip re-encoding it (most kinds tell
    no story: a meal, a commute).
    """
    old = story.data
    if len(data) == len(old) and all(old.get(key, data) is value for key, value in data.items()):
        return story
    return StoryState(data)

