"""What is in progress in her life and how one activity moves it on: books, shows, pieces, plants, storylines, work.

Each `advance_*` is pure: it takes the old story data (a JSON-shaped dict), the scene and a seeded rng and returns
the new data, the slot values the sentence may use, and the story event worth saying (a book finished, a piece
finally smooth, a friend's news). Progress only moves forward: pages and episodes grow with real minutes, a piece is
"smooth" once and then a new one starts, a storyline's ending is said once and that storyline never comes back.
A milestone (the last page, the smooth run, the delivery) is reached only by an activity that was completed, so an
interrupted sentence never announces an ending that the next one would have to repeat.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.life.scene import Companion, Moment, Outcome, Scene
from engine.life.wording import cn_count, cn_ordinal

PAGE_MINUTES = (1.5, 2.0)  # an ordinary reader's pace: one page every 1.5-2 minutes
EPISODE_MINUTES = 45  # one episode of a drama series
LESSON_MINUTES = 40  # one lesson of a course
JOURNAL_MINUTES_PER_PAGE = 8  # a handwritten page with thinking between lines
LINE_GAP_DAYS = 7  # a friend's news moves on at most weekly (a storyline's own `gap_days` may say more: a
                   # pregnancy moves in months): life does not happen between two calls (issue 24)
PLANT_WATER_DAYS = 2  # watering a plant counts toward its growth once in this many days


@dataclass(frozen=True)
class Told:
    """What one activity adds to the sentence: slot values and the story event (None when nothing new)."""

    slots: dict[str, str] = field(default_factory=dict)
    event: str | None = None


def _done(scene: Scene) -> bool:
    return scene.moment is Moment.COMPLETED and scene.outcome is Outcome.DONE


def _pick(items: Sequence[Mapping[str, Any]], index: int) -> tuple[Mapping[str, Any], bool]:
    """The index-th item of a list that wraps around, and whether this is a second round (a reread, a rewatch)."""
    return items[index % len(items)], index >= len(items)


def _title(item: Mapping[str, Any]) -> str:
    return f"《{item['title']}》"


@dataclass(frozen=True)
class _Step:
    """One activity's move along a list she works through in order: books, series, pieces, courses, projects."""

    item: Mapping[str, Any]  # the one she was on
    again: bool  # a second round of the list (a reread)
    need: int  # how much of it there is (pages, minutes)
    before: int  # how far she was before this activity
    now: int  # how far she is after it: short of `need` unless it was finished
    next: Mapping[str, Any] | None = None  # the one begun because `item` was finished


def _step(progress: dict[str, Any], key: str, unit: str, items: Sequence[Mapping[str, Any]],
          need: Callable[[Mapping[str, Any]], int], gained: int, scene: Scene) -> _Step:
    """Move `progress[key]` (an index into `items` and its `unit` so far) on by `gained`, the one rule of every
    list: the end is reached only by a completed activity, and the next item then starts from zero; short of
    that, progress stops one unit before the end."""
    cur = progress.get(key, {"index": 0, unit: 0})
    item, again = _pick(items, cur["index"])
    total, before = need(item), cur[unit]
    now = before + gained
    if now >= total and _done(scene):
        nxt, _ = _pick(items, cur["index"] + 1)
        progress[key] = {"index": cur["index"] + 1, unit: 0}
        return _Step(item, again, total, before, now, nxt)
    now = min(now, total - 1)
    progress[key] = {"index": cur["index"], unit: now}
    return _Step(item, again, total, before, now)


def advance_book(state: dict[str, Any], scene: Scene, rng: random.Random, books: Sequence[Mapping[str, Any]]) -> Told:
    """Pages from minutes; the chapter follows the page; the last page only on a completed sitting, then a new book."""
    pages_read = max(1, round(scene.minutes / rng.uniform(*PAGE_MINUTES)))
    step = _step(state, "book", "page", books, lambda book: int(book["pages"]), pages_read, scene)
    slots = {"book": _title(step.item), "pages": cn_count(pages_read, "页")}
    event = None
    if step.next is not None:
        slots["pages"] = cn_count(max(1, step.need - step.before), "页")
        slots["next_book"] = _title(step.next)
        event = "finished"
    else:
        slots["chapter"] = cn_ordinal(1 + step.now * int(step.item["chapters"]) // step.need, "章")
        if step.before == 0 and _done(scene):
            event = "new"
    if step.again:
        slots["again"] = "重读"
    return Told(slots, event)


def advance_show(state: dict[str, Any], scene: Scene, shows: Sequence[Mapping[str, Any]]) -> Told:
    """Episodes from minutes watched; the last episode only on a completed evening, then the next series."""
    step = _step(state, "show", "watched_min", shows, lambda show: int(show["episodes"]) * EPISODE_MINUTES,
                 scene.minutes, scene)
    slots = {"show": _title(step.item)}
    if scene.minutes >= EPISODE_MINUTES * 3 // 4:  # "两集" is said of the time it takes, not of boundaries crossed
        count = round(scene.minutes / EPISODE_MINUTES)
        slots["eps"] = cn_count(count, "集")
        if count >= 2:
            slots["many_eps"] = slots["eps"]  # "一口气看了两集", never "一口气看了一集"
    if step.next is not None:
        slots["next_show"] = _title(step.next)
        return Told(slots, "finished")
    slots["ep"] = cn_ordinal(1 + step.now // EPISODE_MINUTES, "集")
    return Told(slots)


def advance_film(state: dict[str, Any], films: Sequence[str]) -> Told:
    """A film she has not seen yet (the list in order, so none is seen twice until all are)."""
    index = int(state.get("film", 0))
    state["film"] = index + 1
    return Told({"film": f"《{films[index % len(films)]}》"})


def advance_skill(state: dict[str, Any], track: str, scene: Scene, items: Sequence[Mapping[str, Any]],
                  stages: Sequence[str]) -> Told:
    """Practice minutes bring a piece through its stages; it becomes smooth once, on a completed session."""
    skills = dict(state.get("skills", {}))
    step = _step(skills, track, "practice_min", items, lambda item: int(item["hours"] * 60), scene.minutes, scene)
    state["skills"] = skills
    slots = {"piece": str(step.item["name"])}
    if step.next is not None:
        slots["next_piece"] = str(step.next["name"])
        return Told(slots, "smooth")
    slots["stage"] = stages[min(len(stages) - 1, step.now * len(stages) // step.need)]
    return Told(slots, "new" if step.before == 0 and _done(scene) else None)


def advance_course(state: dict[str, Any], scene: Scene, courses: Sequence[Mapping[str, Any]]) -> Told:
    """Lessons from minutes of study; a finished course is followed by the next one."""
    step = _step(state, "course", "studied_min", courses, lambda course: int(course["lessons"]) * LESSON_MINUTES,
                 scene.minutes, scene)
    slots = {"course": str(step.item["name"])}
    if step.next is not None:
        slots["next_course"] = str(step.next["name"])
        return Told(slots, "finished")
    slots["lesson"] = cn_ordinal(1 + step.now // LESSON_MINUTES, "课")
    return Told(slots)


def advance_journal(state: dict[str, Any], scene: Scene, notebook_pages: int) -> Told:
    """Pages written from minutes; a full notebook is put away and a new one begun."""
    written = int(state.get("journal_page", 0))
    pages = max(1, round(scene.minutes / JOURNAL_MINUTES_PER_PAGE))
    slots = {"pages": cn_count(pages, "页")}
    event = None
    if written + pages >= notebook_pages and _done(scene):
        written, event = 0, "finished"
    else:
        written = min(written + pages, notebook_pages - 1)
        slots["page_no"] = cn_ordinal(written, "页") if written else cn_ordinal(1, "页")
    state["journal_page"] = written
    return Told(slots, event)


def advance_project(state: dict[str, Any], scene: Scene, projects: Sequence[Mapping[str, Any]]) -> Told:
    """Work hours move her studio project through its phases; it is delivered once, then the next one begins."""
    step = _step(state, "project", "work_min", projects, lambda project: int(project["hours"] * 60),
                 scene.minutes, scene)
    phases: Sequence[str] = step.item["phases"]
    slots = {"project": str(step.item["name"])}
    if step.next is not None:
        slots["next_project"] = str(step.next["name"])
        return Told(slots, "delivered")
    phase = step.now * len(phases) // step.need
    slots["phase"] = str(phases[phase])
    return Told(slots, "phase" if phase > step.before * len(phases) // step.need and _done(scene) else None)


def advance_plant(state: dict[str, Any], scene: Scene, plants: Sequence[Mapping[str, Any]]) -> Told:
    """A pot grows by the days it has been cared for; each new stage is said once; after its last one, a new pot."""
    today = scene.ended.date()
    cur = dict(state.get("plant", {"index": 0, "care_days": 0, "stage": 0, "last": None}))
    plant, _ = _pick(plants, cur["index"])
    stages: Sequence[Mapping[str, Any]] = plant["stages"]
    last = dt.date.fromisoformat(cur["last"]) if cur["last"] else None
    if _done(scene) and (last is None or (today - last).days >= PLANT_WATER_DAYS):
        cur["care_days"] += PLANT_WATER_DAYS if last is not None else 1
        cur["last"] = today.isoformat()
    reached = max(i for i, s in enumerate(stages) if cur["care_days"] >= int(s["day"]))
    slots = {"plant": str(plant["name"])}
    event = None
    if reached > cur["stage"] and _done(scene):
        cur["stage"] = cur["stage"] + 1  # one stage at a time, so none is skipped in the telling
        slots["growth"] = str(stages[cur["stage"]]["news"])
        event = "grew"
        if cur["stage"] == len(stages) - 1:
            nxt, _ = _pick(plants, cur["index"] + 1)
            slots["next_plant"] = str(nxt["name"])
            cur = {"index": cur["index"] + 1, "care_days": 0, "stage": 0, "last": None}
            event = "ended"
    else:
        slots["look"] = str(stages[cur["stage"]]["look"])
    state["plant"] = cur
    return Told(slots, event)


def _line_order(person: str, count: int, seed: str = "") -> list[int]:
    """The order in which one person's storylines come: fixed per person of one companion (a hash), different
    between people and between companions (issue 24 item 3: a second chart had the same storylines in order)."""
    order = list(range(count))
    key = f"{seed}|{person}" if seed else person
    random.Random(int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")).shuffle(order)
    return order


def away_ids(state: Mapping[str, Any]) -> frozenset[str]:
    """The people whose storyline took them away for good (abroad): she calls them, she no longer meets them."""
    lines = state.get("lines", {})
    return frozenset(p for p, m in lines.items() if isinstance(m, dict) and m.get("settled"))


def advance_line(state: dict[str, Any], scene: Scene, who: Companion | None,
                 lines: Sequence[Mapping[str, Any]], seed: str = "") -> Told:
    """A meeting or call with someone moves their current storyline on by one beat, at most every few days.

    Storylines are chosen by relation; each one's beats are said in order and its last beat (the ending) once,
    after which it is marked done for that person and never starts again. When someone has lived through all
    their storylines, meetings go on without news. Arcs cannot contradict: a storyline whose `blocks` names
    another rules that one out for the person once begun (a mother does not start dating; a wedding is not
    followed by a first blind date), and an ending that leaves a mark (a baby) changes later meetings: its
    `after` lines take about half of the meetings before a new storyline and all of them once none is left.
    """
    name = who.name if who else ""
    slots = {"name": name} if who else {}
    if who is None or not _done(scene):
        return Told(slots)
    today = scene.ended.date()
    people = dict(state.get("lines", {}))
    mine = dict(people.get(who.id, {"done": [], "key": None, "beat": 0, "last": None}))
    fitting = [line for line in lines if who.relation in line["for"]]
    current_line = next((x for x in fitting if x["key"] == mine["key"]), None)
    gap = int(current_line.get("gap_days", LINE_GAP_DAYS)) if current_line is not None else LINE_GAP_DAYS
    if mine["last"] and (today - dt.date.fromisoformat(mine["last"])).days < gap:
        return Told(slots)
    if mine.get("settled"):   # a storyline that changed her life for good (she moved abroad): no new arcs at home
        return Told(slots)
    event = None
    if mine["key"] is None:
        # a household's storyline (the parents' kitchen) is lived once, whichever parent tells it (issue 24)
        taken = {str(k) for p, m in people.items() if p != who.id for k in (*m.get("done", ()), m.get("key"))
                 if k is not None}
        lived = [x for x in fitting if x["key"] in mine["done"]]
        blocked = {str(b) for x in lived for b in x.get("blocks", ())}
        waiting = [fitting[i] for i in _line_order(who.id, len(fitting), seed)
                   if fitting[i]["key"] not in mine["done"] and fitting[i]["key"] not in blocked
                   and not (fitting[i].get("shared") and fitting[i]["key"] in taken)]
        after = [str(a) for x in lived for a in x.get("after", ())]
        if after and (not waiting or _line_order(f"{who.id}|{today.isoformat()}|after", 2, seed)[0] == 0):
            # a mark an ending left (the baby she has now): a later meeting is about it, now and then
            pick = _line_order(f"{who.id}|{today.isoformat()}", len(after), seed)[0]
            mine["last"] = today.isoformat()
            people[who.id] = mine
            state["lines"] = people
            return Told({**slots, "news": after[pick].replace("{name}", name)}, "line_after")
        if not waiting:
            return Told(slots)
        line = waiting[0]
        mine.update(key=line["key"], beat=0)
        event = "line_new"
    else:
        current = [x for x in fitting if x["key"] == mine["key"]]
        if not current:  # the catalogue dropped this storyline (or the person's relation changed): let it rest
            people[who.id] = {**mine, "key": None, "beat": 0}
            state["lines"] = people
            return Told(slots)
        line = current[0]
        mine["beat"] = min(mine["beat"] + 1, len(line["beats"]) - 1)
        event = "line_next"
    beats: Sequence[str] = line["beats"]
    slots["news"] = beats[mine["beat"]].replace("{name}", name)
    slots["topic"] = str(line["topic"])
    if mine["beat"] in line.get("worry", ()):
        slots["worry"] = "1"   # worrying news: narrate answers it with concern (issue 24: no 挂了电话还在笑 after it)
    mine["last"] = today.isoformat()
    if mine["beat"] == len(beats) - 1:
        event = "line_end"
        mine = {"done": [*mine["done"], line["key"]], "key": None, "beat": 0, "last": mine["last"]}
        if line.get("settles"):
            mine["settled"] = True
    people[who.id] = mine
    state["lines"] = people
    return Told(slots, event)
