"""Checks for the logic slips a reader found in her narrated life (issue 24, acceptance 1); pure, findings only.

Beside engine/life/checks.py and in its form (a `Line` per narrated event, a `Finding` per slip, never the
sentence itself): two dinners in one evening, footsteps counted for shopping online, a cinema's 散场 in front of
a home projector, a film that runs longer or shorter than the film is, the day's low quoted at midday, and rain
said in every sentence from morning to midnight. Each is written from what a reader knows (a film's runtime,
that one eats one dinner, that the coldest hour is before dawn), not from the narrator's word lists.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from engine.life.checks import Finding, Line, World
from engine.life.numerals import chinese_int, quantities

SLIPS = ("dinners", "online_steps", "home_cinema", "film_length", "low_at_noon", "all_day_rain", "work_on_day_off",
         "cold_again")
DAY_TURNS_AT_H = 4

# --- two dinners -------------------------------------------------------------------------------------------------

EVENING_FROM_H = 16
# A line that says she ate a meal: her dinner, a meal out with someone, or eating what she cooked.
_ATE = re.compile(r"晚饭|吃饭|吃了饭|一起吃了|小馆子|火锅|年夜饭|团圆饭|吃了大半盘")
_NOT_NOW = re.compile(r"(?:下次|改天|打算|约我|想去|说要)\S{0,6}$")   # 约我下次去新家吃火锅 is no meal tonight


def _ate(text: str) -> bool:
    return any(not _NOT_NOW.search(text[max(0, m.start() - 8):m.start()]) for m in _ATE.finditer(text))


_COOKED_DISH = re.compile(r"做了|炒了|炖了|烧了")
_FOR_LATER = re.compile(r"明天|饭盒|留着")


def _local_day(at: dt.datetime) -> dt.date:
    return (at - dt.timedelta(hours=DAY_TURNS_AT_H)).date()


def check_dinners(lines: Iterable[Line]) -> list[Finding]:
    """At most one dinner an evening: her dinner, a dinner out, or a dish cooked and eaten after dinner count."""
    out: list[Finding] = []
    meals: dict[dt.date, list[Line]] = defaultdict(list)
    for line in sorted(lines, key=lambda x: x.at):
        if (line.at.hour < EVENING_FROM_H and line.at.hour >= DAY_TURNS_AT_H) or line.moment != "completed":
            continue
        day = _local_day(line.at)
        eats = line.kind == "dinner" or (line.kind != "call_friend" and _ate(line.text))
        cooks_after = (line.kind == "cook" and meals[day] and _COOKED_DISH.search(line.text) is not None
                       and _FOR_LATER.search(line.text) is None)
        if eats or cooks_after:
            if meals[day]:
                out.append(Finding("dinners", line.id, line.kind or "?",
                                   f"a second dinner on {day} after event {meals[day][0].id}"))
            meals[day].append(line)
    return out


# --- shopping online with footsteps ------------------------------------------------------------------------------

_ONLINE = re.compile(r"网上|网购|下单|手机上挑|淘宝")


def check_online_steps(lines: Iterable[Line]) -> list[Finding]:
    """Steps are walked, not clicked: a sentence about shopping online counts no footsteps."""
    out: list[Finding] = []
    for line in lines:
        if _ONLINE.search(line.text) and any(q.unit == "steps" for q in quantities(line.text)):
            out.append(Finding("online_steps", line.id, "步", "footsteps counted for shopping online"))
    return out


# --- 散场 at home ------------------------------------------------------------------------------------------------

_HOME_SCREEN = re.compile(r"投影|在家看|家里看|电视上")
_CINEMA_ONLY = re.compile(r"散场|影院里|检票|爆米花")


def check_home_cinema(lines: Iterable[Line]) -> list[Finding]:
    """A film at home has no 散场 (the crowd leaving a cinema), no ticket check."""
    out: list[Finding] = []
    for line in lines:
        cinema = _CINEMA_ONLY.search(line.text)
        if cinema and _HOME_SCREEN.search(line.text):
            out.append(Finding("home_cinema", line.id, cinema.group(0), "a cinema word for a film at home"))
    return out


# --- a film's runtime -------------------------------------------------------------------------------------------

# Runtimes in minutes (theatrical release; general knowledge, rounded) of the films her narration names.
FILM_MINUTES = {
    "海上钢琴师": 125, "千与千寻": 125, "霸王别姬": 171, "寻梦环游记": 105, "天使爱美丽": 122, "阿甘正传": 142,
    "龙猫": 86, "菊次郎的夏天": 121, "你好，李焕英": 128, "哪吒之魔童降世": 110, "流浪地球": 125, "绿皮书": 130,
    "放牛班的春天": 97, "心灵奇旅": 100, "小森林": 103, "楚门的世界": 103, "爱在黎明破晓前": 101, "一一": 173,
    "那山那人那狗": 93, "步履不停": 114, "海街日记": 128, "入殓师": 130, "怦然心动": 90, "疯狂动物城": 109,
    "妈妈！": 134, "隐入尘烟": 133, "我不是药神": 117, "奇迹·笨小孩": 106, "宇宙探索编辑部": 117, "好东西": 123,
}
FILM_SLACK_MIN = 20
_TITLE = re.compile(r"《([^》]+)》")
_RAN = re.compile(r"片子|电影(?:有|长|放了|演了)|片长")


def check_film_length(lines: Iterable[Line]) -> list[Finding]:
    """A film's length, when a sentence gives one (片子两个半小时), is about its real runtime."""
    out: list[Finding] = []
    for line in lines:
        titles = [m.group(1) for m in _TITLE.finditer(line.text) if m.group(1) in FILM_MINUTES]
        ran = _RAN.search(line.text)
        if not titles or ran is None:
            continue
        runtime = FILM_MINUTES[titles[0]]
        for q in quantities(line.text[ran.start():]):
            if q.unit == "minutes" and (q.lo > runtime + FILM_SLACK_MIN or q.hi < runtime - FILM_SLACK_MIN):
                out.append(Finding("film_length", line.id, q.word, f"《{titles[0]}》 runs {runtime} minutes"))
                break
    return out


# --- the day's low at noon ---------------------------------------------------------------------------------------

MIDDAY_H = (10, 17)
_DEGREES = re.compile(r"(零下)?([零一二两三四五六七八九十]+)度")


def check_low_at_noon(lines: Iterable[Line], world: World) -> list[Finding]:
    """The day's low is the hour before dawn: a midday sentence that says it is 'only' the low is a slip."""
    out: list[Finding] = []
    for line in lines:
        if not MIDDAY_H[0] <= line.at.hour < MIDDAY_H[1] or "最高" in line.text:
            continue
        low = round(world(line.at.date()).temp_low_c)
        high = round(world(line.at.date()).temp_high_c)
        for m in _DEGREES.finditer(line.text):
            value = chinese_int(m.group(2)) * (-1 if m.group(1) else 1)
            if value == low and low != high:
                out.append(Finding("low_at_noon", line.id, m.group(0),
                                   f"the day's low ({low}°C) said at {line.at:%H:%M}"))
    return out


# --- rain from morning to midnight -----------------------------------------------------------------------------

_RAIN = re.compile(r"(?<!小)雨(?!伞)|下雨")
ALL_DAY_FROM_H, ALL_DAY_TO_H = 8, 22
ALL_DAY_SHARE = 0.45   # of the day's sentences


def check_all_day_rain(lines: Iterable[Line], names: Iterable[str] = ()) -> list[Finding]:
    """Rain said from morning until late at night in nearly every outdoor-facing sentence reads as rain that
    never stops; real rain comes and goes within a day."""
    people = tuple(names)
    out: list[Finding] = []
    by_day: dict[dt.date, list[Line]] = defaultdict(list)
    for line in lines:
        by_day[_local_day(line.at)].append(line)
    for _day, day_lines in sorted(by_day.items()):
        said = []
        for line in day_lines:
            text = line.text
            for name in people:
                text = text.replace(name, "")
            if _RAIN.search(text):
                said.append(line)
        if len(said) < 4:
            continue
        first, last = min(x.at for x in said), max(x.at for x in said)
        span_ok = first.hour <= ALL_DAY_FROM_H and (last.hour >= ALL_DAY_TO_H or last.hour < DAY_TURNS_AT_H)
        if span_ok and len(said) >= ALL_DAY_SHARE * len(day_lines):
            out.append(Finding("all_day_rain", said[-1].id, "雨", f"rain said from {first:%H:%M} to {last:%H:%M}"))
    return out


# --- the studio on a day off, a cold caught twice ----------------------------------------------------------------

# Said of her own working day: overtime, a 午休 at her desk, the studio, the ride to or from work. "不用上班" (no
# work today) and a friend's news (说…) are not.
_AT_WORK = re.compile(r"加班|工位|工作室|(?<!不用)上班|下班")


def check_work_on_day_off(lines: Iterable[Line], world: World) -> list[Finding]:
    """A weekend or a holiday (国庆 on a trip, 春节 at her parents') has no overtime, no 午休 at her desk, no studio
    (issue 24 item 5): her own working day said on a day off is a slip."""
    out: list[Finding] = []
    for line in lines:
        day = _local_day(line.at)
        if not world(day).is_day_off:
            continue
        own = re.split(r"说", line.text, maxsplit=1)[0]   # what a friend says of her job is not her day
        m = _AT_WORK.search(own)
        if m:
            out.append(Finding("work_on_day_off", line.id, m.group(0), f"her working day said on a day off ({day})"))
    return out


_CAUGHT = re.compile(r"好像感冒了|八成是感冒了")
COLD_GAP_DAYS = 7


def check_cold_again(lines: Iterable[Line]) -> list[Finding]:
    """A cold is caught once and then goes on (还没好) until it is better: catching it again within a week is a
    slip (issue 24 item 5: a few days of a cold, told as one cold)."""
    out: list[Finding] = []
    last: dt.date | None = None
    for line in sorted(lines, key=lambda x: x.at):
        if not _CAUGHT.search(line.text):
            continue
        day = _local_day(line.at)
        if last is not None and 0 < (day - last).days < COLD_GAP_DAYS:
            out.append(Finding("cold_again", line.id, "感冒", f"a cold caught on {day}, {(day - last).days} days "
                               "after the last"))
        if last is None or day != last:
            last = day
    return out


def run_slips(lines: Sequence[Line], world: World, names: Iterable[str] = ()) -> dict[str, list[Finding]]:
    """Every slip check over one narrated life, by name (SLIPS order)."""
    people = tuple(names)
    return {"dinners": check_dinners(lines), "online_steps": check_online_steps(lines),
            "home_cinema": check_home_cinema(lines), "film_length": check_film_length(lines),
            "low_at_noon": check_low_at_noon(lines, world), "all_day_rain": check_all_day_rain(lines, people),
            "work_on_day_off": check_work_on_day_off(lines, world), "cold_again": check_cold_again(lines)}
