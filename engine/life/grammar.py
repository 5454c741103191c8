"""The small grammar of her sentences: productions of clauses, clause alternatives with conditions, slot filling.

A sentence is one production (for example setting + action + detail + feeling) whose symbols each expand to one
eligible alternative. An alternative is eligible when its conditions hold for the scene (rain words only on a rainy
day, 晚霞 only near sunset) and every slot it names has a value (a sight line only when something is in season),
so world truth is decided by eligibility, never by patching words afterwards. The data is
engine/life/data/narration.toml, loaded and validated once.
"""

from __future__ import annotations

import random
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from engine.errors import ConfigError
from engine.feelings import table as feelings_table

SLOT = re.compile(r"\{(\w+)\}")
MOMENTS = ("done", "disappointed", "resumed", "abandoned")
# Symbols whose alternatives are the clause the sentence is about: a production without one of them is not tried.
CORE = frozenset({"action", "letdown", "resume", "abandon"})
# Symbols that may come from the kind's own table or, failing that, the shared [common] table.
# Slots that name a thing and may come back in a later clause ("读{book}……{book}"); every other slot (a number,
# a sight, a dream) is said once per sentence, so "写了十三页，写了十三页" cannot be composed.
REPEATABLE = frozenset({"who", "name", "book", "piece", "plant", "project", "show", "course", "verb", "festival",
                        "topic"})
HEAD = 3  # two clauses of one sentence never open with the same three characters
SHARED = frozenset({"setting", "feeling", "resume", "remaining", "abandon", "letdown", "regret", "aftermath"})
_WHERE = "engine/life/data/narration.toml"


@dataclass(frozen=True)
class Alt:
    """One alternative of a symbol: a template with {slots} and the conditions under which it may be said."""

    text: str
    conditions: tuple[str, ...]
    slots: tuple[str, ...]
    tests: tuple[tuple[Callable[[Mapping[str, Any]], bool], bool], ...] = ()  # (predicate, negated), resolved once
    # The slots it names that are said once per sentence (not REPEATABLE), derived once: choose tests every
    # alternative of a symbol against the slots already used, thousands of times in a simulated year.
    once: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "once", frozenset(self.slots) - REPEATABLE)


@dataclass(frozen=True)
class KindWords:
    """A kind's own clauses by symbol and moment ("action.done"), plus its resumable verb."""

    verb: str
    clauses: Mapping[str, tuple[Alt, ...]]


@dataclass(frozen=True)
class Grammar:
    """Everything of narration.toml: productions per moment, word pools, shared and per-kind clauses."""

    productions: Mapping[str, tuple[tuple[str, ...], ...]]
    words: Mapping[str, tuple[str, ...]]
    common: Mapping[str, tuple[Alt, ...]]
    kinds: Mapping[str, KindWords]
    sight_lines: Mapping[str, tuple[Alt, ...]]
    data: Mapping[str, Any]  # the story tables (books, shows, pieces, plants, storylines, projects, festivals)

    def alternatives(self, kind: str, symbol: str, moment: str, event: str | None = None) -> tuple[Alt, ...]:
        """The alternatives for `symbol` in `moment`: the kind's own for the story event, its own, else shared."""
        own = self.kinds[kind].clauses
        if event is not None and f"{symbol}.{event}" in own:
            return own[f"{symbol}.{event}"]
        for key in (f"{symbol}.{moment}", symbol):
            if key in own:
                return own[key]
        if symbol in SHARED:
            for key in (f"{symbol}.{moment}", symbol):
                if key in self.common:
                    return self.common[key]
        return ()


def _alt(raw: object, where: str) -> Alt:
    conditions: tuple[str, ...] = ()
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, dict) and isinstance(raw.get("t"), str):
        cond = raw.get("if", [])
        if isinstance(cond, str):
            cond = [cond]
        if not isinstance(cond, list) or not all(isinstance(c, str) for c in cond):
            raise ConfigError(f"{_WHERE}: {where} 'if' must be a condition name or a list of them, got {cond!r}")
        text, conditions = str(raw["t"]), tuple(cond)
    else:
        raise ConfigError(f"{_WHERE}: {where} alternatives are strings or {{t = \"...\", if = [...]}}, got {raw!r}")
    for name in conditions:
        if name.lstrip("!") not in CONDITIONS:
            raise ConfigError(f"{_WHERE}: {where} unknown condition {name!r}; known: {', '.join(sorted(CONDITIONS))}")
    tests = tuple((CONDITIONS[name.lstrip("!")], name.startswith("!")) for name in conditions)
    return Alt(text=text, conditions=conditions, slots=tuple(SLOT.findall(text)), tests=tests)


def _clauses(table: Mapping[str, Any], where: str) -> dict[str, tuple[Alt, ...]]:
    """A table of symbol -> list, or symbol -> {moment -> list}, flattened to 'symbol' / 'symbol.moment' keys."""
    out: dict[str, tuple[Alt, ...]] = {}
    for symbol, value in table.items():
        if isinstance(value, list):
            out[symbol] = tuple(_alt(a, f"{where}.{symbol}") for a in value)
        elif isinstance(value, dict):
            for moment, alts in value.items():
                if not isinstance(alts, list):
                    raise ConfigError(f"{_WHERE}: {where}.{symbol}.{moment}: a moment {MOMENTS} or story event "
                                      "must be a list of alternatives")
                out[f"{symbol}.{moment}"] = tuple(_alt(a, f"{where}.{symbol}.{moment}") for a in alts)
    return out


def parse(raw: Mapping[str, Any]) -> Grammar:
    """Validate the parsed TOML into a Grammar (ConfigError names the table and the fix)."""
    productions: dict[str, tuple[tuple[str, ...], ...]] = {}
    for moment in MOMENTS:
        rows = raw.get("production", {}).get(moment)
        if not isinstance(rows, list) or not rows:
            raise ConfigError(f"{_WHERE}: [production] needs a non-empty list {moment} = [[symbols...], ...]")
        prods = tuple(tuple(row) for row in rows)
        for prod in prods:
            if not any(symbol in CORE for symbol in prod):
                raise ConfigError(f"{_WHERE}: [production] {moment} {list(prod)} has no core symbol of {sorted(CORE)}")
        productions[moment] = prods
    words = {k: tuple(v) for k, v in raw.get("words", {}).items()}
    for name, pool in words.items():
        if not pool or not all(isinstance(w, str) and w for w in pool):
            raise ConfigError(f"{_WHERE}: [words] {name} must be a non-empty list of words")
    kinds: dict[str, KindWords] = {}
    for kind, table in raw.get("kind", {}).items():
        body = {k: v for k, v in table.items() if k not in ("verb", "outdoor")}
        kinds[kind] = KindWords(verb=str(table.get("verb", "")), clauses=_clauses(body, f"[kind.{kind}]"))
    sight_lines = {k: tuple(_alt(a, f"[sight_line].{k}") for a in v) for k, v in raw.get("sight_line", {}).items()}
    grammar = Grammar(productions=productions, words=words, common=_clauses(raw.get("common", {}), "[common]"),
                      kinds=kinds, sight_lines=sight_lines, data=raw)
    return grammar


@cache
def grammar() -> Grammar:
    """The grammar of data/narration.toml, parsed and validated once."""
    text = (resources.files("engine.life") / "data" / "narration.toml").read_text(encoding="utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{_WHERE} is not valid TOML: {exc}") from exc
    return parse(raw)


# Conditions are named predicates over a Facts mapping (built by narrate from the scene and its world): the data
# file names them, this table defines them, so a typo in the file is a load error rather than a silent never.
Facts = Mapping[str, Any]
# Conditions that name a weather (narrate's `weather` fact): the weathers each one holds.
WEATHERS = {
    "rain": ("小雨", "大雨"), "heavy_rain": ("大雨",), "light_rain": ("小雨",), "snow": ("雪",), "fog": ("雾",),
    "clear": ("晴",), "cloudy": ("多云",), "overcast": ("阴",),
    "sky": ("晴", "多云"),  # sun or sky visible: 阳光, 晚霞, 晒
    "dry": ("晴", "多云", "阴", "雾"),
}
# The parts of her day (narrate's `phase` fact), each a condition of its own name.
PHASES = ("before_dawn", "early", "morning", "noon", "afternoon", "dusk", "evening", "late")
# Conditions that name a festival (the `festival` fact, as engine/life/calendar.py names it).
FESTIVALS = {
    "chuxi": "除夕", "chunjie": "春节", "zhongqiu": "中秋节", "qingming": "清明节", "laba": "腊八节",
    "yuanxiao": "元宵节", "duanwu": "端午节", "qixi": "七夕节", "chongyang": "重阳节", "dongzhi": "冬至",
}


def _weather_in(weathers: tuple[str, ...]) -> Callable[[Facts], bool]:
    return lambda f: f["weather"] in weathers


def _phase_is(phase: str) -> Callable[[Facts], bool]:
    return lambda f: f["phase"] == phase


def _festival_is(festival: str) -> Callable[[Facts], bool]:
    return lambda f: f.get("festival") == festival


def _feeling_is(key: str) -> Callable[[Facts], bool]:
    return lambda f: f.get("feeling") == key


CONDITIONS: dict[str, Callable[[Facts], bool]] = {
    **{name: _weather_in(weathers) for name, weathers in WEATHERS.items()},
    **{phase: _phase_is(phase) for phase in PHASES},
    **{name: _festival_is(festival) for name, festival in FESTIVALS.items()},
    "outdoor": lambda f: bool(f["outdoor"]),
    "hot": lambda f: f["temp_high"] >= 30,
    "warm": lambda f: 20 <= f["temp_high"] < 30,
    "cool": lambda f: f["temp_low"] > 8 and f["temp_high"] < 20,
    "cold": lambda f: f["temp_low"] <= 3,
    "freezing": lambda f: f["temp_low"] <= -3,
    # the day's low is quoted only when it is near it: before dawn, early, late at night (not at noon, issue 24)
    "coolest": lambda f: f["phase"] in ("before_dawn", "early", "late"),
    # the wash before bed: 换上睡衣 belongs to the evening, not to the wash before a commute
    "bedtime": lambda f: f["phase"] in ("evening", "late"),
    "glow": lambda f: bool(f["glow"]),  # the interval met sunset with sky: 晚霞, 夕阳
    "dark": lambda f: bool(f["dark"]),  # it ended after dusk
    "light": lambda f: bool(f["light"]),  # it ended between sunrise and sunset
    "woke_light": lambda f: bool(f["woke_light"]),  # ended after dawn: 天亮了 may be said
    "workday": lambda f: not f["day_off"],
    "dayoff": lambda f: bool(f["day_off"]),
    "festival": lambda f: f["festival"] is not None,
    "spring_festival": lambda f: bool(f["spring_festival"]),
    "with": lambda f: f["with_whom"] is not None,
    "long": lambda f: f["minutes"] >= 60,
    "short": lambda f: f["minutes"] < 25,
    "pos": lambda f: f["band"] == "pos",
    "neg": lambda f: f["band"] == "neg",
    "flat": lambda f: f["band"] == "flat",
    "going": lambda f: bool(f["going"]),  # a commute before noon: to the studio
    "home": lambda f: f["place"] == "家",  # the day machine says she is at home (a freelance workday)
    "away": lambda f: f["place"] not in (None, "家"),
    # issue 24: her strongest named feeling (f_<key> per engine/data/feelings.toml) and whether its cause is
    # something the user told her; `tail` is the rare draw that allows a flat stock tail
    "felt": lambda f: f.get("feeling") is not None,
    "user_cause": lambda f: bool(f.get("user_cause")),
    "tail": lambda f: bool(f.get("tail")),
    "pos_say": lambda f: bool(f.get("pos_say")),
    "dined": lambda f: bool(f.get("dined")),
    "cooked": lambda f: bool(f.get("cooked")),
    "before_supper": lambda f: bool(f.get("before_supper")),
    # the Spring Festival at her parents' (issue 24, acceptance 4): the train home and back, meals there, 除夕, 初一
    "train": lambda f: f.get("place") in ("回老家的高铁上", "回城的高铁上") or bool(f.get("trip")),
    "train_home": lambda f: f.get("place") == "回老家的高铁上",
    "train_back": lambda f: f.get("place") == "回城的高铁上",
    "at_parents": lambda f: bool(f.get("at_parents")),
    # her role's workday (engine/life/data/roles.toml, issue 24 item 7)
    "draws": lambda f: bool(f.get("draws", True)),
    "studio": lambda f: bool(f.get("studio", True)),
    "metro": lambda f: bool(f.get("metro", True)),
    "riding": lambda f: bool(f.get("riding", False)),
    "job": lambda f: bool(f.get("job", True)),
    "abroad": lambda f: bool(f.get("abroad", False)),   # she lives outside China (her parents a night away)
    "noted": lambda f: bool(f.get("noted")),   # her day has a note (a letdown, a named cause): the journal says it
    "retry": lambda f: bool(f.get("retry")),   # yesterday this went wrong: today she tries again
    "home_call": lambda f: bool(f.get("home_call")),   # a festival call home (中秋, 清明), not a chat
    "moon_sky": lambda f: f.get("weather") in ("晴", "多云"),   # before 16:00: a festive meal is not a 2nd dinner   # she cooked a dish this evening: it is her dinner   # her dinner is eaten: a friend is met for tea, a dish is for tomorrow   # a glad moment says so in plain words only now and then
    "say_cause": lambda f: bool(f.get("dwell")) and bool(f.get("user_cause")),   # she names what the user told her
    # issue 24 item 4: away on a golden-week trip; a minor festival (lived in one act, named once a day); which one
    "trip": lambda f: bool(f.get("trip")),
    "minor_festival": lambda f: bool(f.get("minor_festival")),
    "fest_said": lambda f: bool(f.get("fest_said")),
    # issue 24 item 5: a less ideal routine (phone in bed, 午休 at her desk, overtime, a cold)
    "in_bed": lambda f: f.get("place") in ("床上", "被窝里"),
    "lying_in": lambda f: f.get("place") == "被窝里",   # in bed after waking (床上: in bed before sleep)
    "desk": lambda f: f.get("place") == "工位",
    "overtime": lambda f: bool(f.get("overtime")),
    "late_home": lambda f: bool(f.get("late_home")),
    "sick": lambda f: bool(f.get("sick")),
    "dwell": lambda f: bool(f.get("dwell")),   # one sentence in a few dwells on what is on her mind
    "sick_first": lambda f: f.get("sick") == "first",
    "sick_last": lambda f: f.get("sick") == "last",
    "skipped": lambda f: bool(f.get("skipped")),
    "good_news": lambda f: bool(f.get("good_news")),
    "worry_news": lambda f: bool(f.get("worry_news")),   # a worrying beat of someone's storyline
    "family": lambda f: f["with_whom"] is not None and f["with_whom"].relation in ("mother", "father"),   # a friend's storyline ended (mostly well): she is glad for them
    "temp_now_ok": lambda f: bool(f.get("temp_now_ok")),
    "rain_coming": lambda f: f.get("rain_turn") == "coming",   # the hour before a rainy day's rain starts
    "rain_over": lambda f: f.get("rain_turn") == "over",       # the hours after it stopped
    "chilly_now": lambda f: f.get("temp_now_c", 99) <= CHILLY_C,   # the hour is cool enough for 风有点凉
    "play": lambda f: bool(f.get("play")),   # an outing, a friend, a film: 玩得挺开心 fits it (not work, not a meal)
}


CHILLY_C = 16


CONDITIONS.update({f"f_{name}": _feeling_is(name) for name in feelings_table().kinds})


def eligible(alt: Alt, facts: Facts, slots: Mapping[str, str]) -> bool:
    """Whether `alt` may be said: every condition holds and every slot it names has a value."""
    for test, negated in alt.tests:
        if test(facts) == negated:
            return False
    # most alternatives name no slot: no generator for them (this runs ~200k times in a simulated year)
    return not alt.slots or all(name in slots for name in alt.slots)


def fill(text: str, slots: Mapping[str, str]) -> str:
    return SLOT.sub(lambda m: slots[m.group(1)], text)


def choose(rng: random.Random, alts: tuple[Alt, ...], facts: Facts, slots: Mapping[str, str],
           used: frozenset[str] = frozenset(), said: tuple[str, ...] = (),
           avoid: frozenset[str] = frozenset()) -> tuple[Alt, str] | None:
    """One eligible alternative, filled, that repeats nothing already `said` in the sentence, or None.

    Not repeated: a number or sight already given (`used` slots), and the opening of an earlier clause (so no
    "晚上，晚上给自己做了……" and no "整个人都松下来了，整个人都轻松了").
    """
    # (the cheap set test first: both are pure, so the order of the two tests changes nothing but the cost)
    usable = [a for a in alts if not (used & a.once) and eligible(a, facts, slots)]
    rng.shuffle(usable)
    heads = {part[:HEAD] for clause in said for part in clause.split("，")}
    for alt in usable:
        text = fill(alt.text, slots) if alt.slots else alt.text   # nothing to fill: no regex pass
        if text in avoid or (avoid and text.rsplit("，", 1)[-1] in avoid):   # the tail her last sentence ended on
            continue
        if any(part[:HEAD] in heads for part in text.split("，")):
            continue
        if any(text.startswith(clause) or clause.startswith(text) for clause in said):
            continue
        return alt, text
    return None


def expand(rng: random.Random, kind: str, moment: str, facts: Facts, slots: Mapping[str, str],
           event: str | None = None, wanted: frozenset[str] = frozenset(),
           avoid: frozenset[str] = frozenset()) -> list[str] | None:
    """The clauses of one production for (kind, moment): a random production whose core symbols all expand.

    Optional symbols (setting, detail, feeling ...) drop out when nothing is eligible; a production whose core
    cannot expand is skipped for the next, so a kind that has no 'letdown' for a sunny day still gets a sentence.
    A story event (a book finished) must be told: the symbols the kind words for that event become core, and only
    productions that contain them are tried. `wanted` symbols (a feeling on a low day) are preferred: productions
    with them are tried first, the others only if none of those expands. A feeling clause in `avoid` (the one her
    last sentence ended on) is not said again at once.
    """
    g = grammar()
    own = g.kinds[kind].clauses
    forced = {key.split(".")[0] for key in own if event is not None and key.endswith(f".{event}")}
    prods = [prod for prod in g.productions[moment] if forced <= set(prod)]
    rng.shuffle(prods)
    if wanted:
        prods.sort(key=lambda prod: not wanted <= set(prod))   # stable: the shuffled order within each group
    for prod in prods:
        clauses: list[str] = []
        used: frozenset[str] = frozenset()
        for symbol in prod:
            picked = choose(rng, g.alternatives(kind, symbol, moment, event), facts, slots, used, tuple(clauses),
                            avoid if symbol == "feeling" else frozenset())
            if picked is None:
                if symbol in CORE or symbol in forced:
                    break
                continue
            alt, text = picked
            clauses.append(text)
            used |= set(alt.slots)
        else:
            if clauses:
                return clauses
    return None


_DOUBLED = re.compile(r"((?<!不)了了|的的|得得|着着|给给|，，|。。|，。|。，)")  # 来不了了 is right


def sentence(clauses: list[str], exclaim: bool) -> str:
    """Join clauses with commas into one sentence ending in 。 (or ！ for a glad one), tidying the seams."""
    text = "，".join(c.strip("，。！ ") for c in clauses if c.strip("，。！ "))
    return text + ("！" if exclaim else "。")


def flaws(text: str) -> list[str]:
    """What is wrong with a rendered sentence (empty when fine): unfilled slots, doubled particles, bad ending."""
    found = []
    if "{" in text or "}" in text:
        found.append("unfilled slot")
    if _DOUBLED.search(text):
        found.append("doubled particle or punctuation")
    if re.search(r"了[\u4e00-\u9fff]了", text):
        found.append("verb-object split with two 了")
    if not text.endswith(("。", "！")):
        found.append("does not end with 。 or ！")
    return found
