"""Reading the user's words for events: what happened, to whom, negated or not, how strongly, and her response.

The lexicon (engine/data/appraisal_lexicon.toml) lists event types (illness, loss, breakup, job loss,
failure, distress, success, joy, praise, hostility) with cue words. For each cue found in the user's
line this module decides, within the cue's clause:
- who it happens to: the nearest subject word before the cue (someone close to the user, her ("你"),
  another person or thing, someone distant), else the user; a hostile or kind cue addressed with
  "你" is directed at her;
- negation: a negator right before the cue ("没生病", "不开心"), except in an A-not-A question
  ("会不会生病"); a negated misfortune is no news, a negated good thing a small misfortune;
- intensity: a degree word right before the cue ("很", "有点") and exclamation marks.
Her response follows from event and person: the user's (or a close one's) misfortune gives concern,
their good news gladness, kind words to her warmth, hostile words at her hurt (her dominance does not
rise: she is not the one who is angry), a misfortune said to be hers a small loss of her own.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.appraisal.affect import Push
from engine.errors import ConfigError

KINDS = ("misfortune", "good", "kind", "hostile")
RESPONSES = ("concern", "gladness", "warmth", "hurt", "own")
SUBJECTS = ("user", "close", "her", "other", "distant")
_CLAUSE = re.compile(r"[，,。.!！?？;；~～\n]+")
_QUESTION = re.compile(r"(.)[不没]\1|有没有")
_SELF_BLAME = re.compile(r"我(真|好|太|就是|真是|是)?个?$")
_DEGREE_WINDOW = 3   # characters before a cue searched for a degree word ("非常难过", "好难过")


@dataclass(frozen=True)
class EventType:
    name: str
    kind: str
    severity: float
    close_only: frozenset[str]


@dataclass(frozen=True)
class Lexicon:
    responses: dict[str, Push]
    cues: tuple[tuple[str, EventType], ...]        # longest first
    subjects: tuple[tuple[str, str], ...]          # (word, subject class), longest first
    subject_scale: dict[str, float]
    negators: tuple[str, ...]
    strong: tuple[str, ...]
    weak: tuple[str, ...]
    strong_scale: float
    weak_scale: float
    negated_good_scale: float
    ignore: tuple[str, ...]


@dataclass(frozen=True)
class Reading:
    """One cue found in the user's line and what it means to her."""

    cue: str
    event: str
    kind: str
    subject: str
    negated: bool
    response: str | None   # None: no news (a negated misfortune)
    scale: float           # severity x degree x subject share


def _load(raw: dict[str, Any]) -> Lexicon:
    try:
        responses = {name: (float(v[0]), float(v[1]), float(v[2])) for name, v in raw["responses"].items()}
        cues: list[tuple[str, EventType]] = []
        for name, spec in raw["events"].items():
            if spec["kind"] not in KINDS:
                raise ConfigError(f"appraisal_lexicon.toml: events.{name}.kind must be one of {KINDS}, "
                                  f"got {spec['kind']!r}")
            event = EventType(name, spec["kind"], float(spec["severity"]), frozenset(spec.get("close_only", ())))
            cues.extend((word, event) for word in spec["words"])
        subj = raw["subjects"]
        subjects = [(w, cls) for cls in ("close", "her", "other", "distant") for w in subj[cls]]
        mods = raw["modifiers"]
        lex = Lexicon(
            responses=responses,
            cues=tuple(sorted(cues, key=lambda c: -len(c[0]))),
            subjects=tuple(sorted(subjects, key=lambda s: -len(s[0]))),
            subject_scale={"user": 1.0, "close": 1.0, "her": 1.0, "other": float(subj["other_scale"]),
                           "distant": float(subj["distant_scale"])},
            negators=tuple(sorted(mods["negators"], key=len, reverse=True)),
            strong=tuple(mods["strong"]), weak=tuple(mods["weak"]),
            strong_scale=float(mods["strong_scale"]), weak_scale=float(mods["weak_scale"]),
            negated_good_scale=float(mods["negated_good_scale"]),
            ignore=tuple(sorted(raw["ignore"]["words"], key=len, reverse=True)),
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ConfigError(f"engine/data/appraisal_lexicon.toml is malformed ({exc!r}); see its header") from exc
    missing = set(RESPONSES) - set(lex.responses)
    if missing:
        raise ConfigError(f"appraisal_lexicon.toml: [responses] lacks {sorted(missing)}")
    return lex


@cache
def lexicon() -> Lexicon:
    """The bundled lexicon, loaded and validated once."""
    text = (resources.files("engine") / "data" / "appraisal_lexicon.toml").read_text(encoding="utf-8")
    return _load(tomllib.loads(text))


def _mask(text: str, words: tuple[str, ...]) -> str:
    """Replace ignored compounds by spaces (same length, so positions stay meaningful)."""
    for word in words:
        text = text.replace(word, " " * len(word))
    return text


def _find_cues(clause: str, lex: Lexicon) -> list[tuple[int, str, EventType]]:
    """Non-overlapping cues, the longest winning where two overlap."""
    taken = [False] * len(clause)
    found: list[tuple[int, str, EventType]] = []
    for word, event in lex.cues:
        start = clause.find(word)
        while start >= 0:
            end = start + len(word)
            if not any(taken[start:end]):
                found.append((start, word, event))
                for i in range(start, end):
                    taken[i] = True
            start = clause.find(word, end)
    return sorted(found, key=lambda f: f[0])


def _subject(before: str, lex: Lexicon) -> str:
    """The subject class of the nearest subject word before the cue, else the user."""
    best, best_end = "user", -1
    for word, cls in lex.subjects:
        end = before.rfind(word)
        if end >= 0 and end + len(word) > best_end:
            best, best_end = cls, end + len(word)
    return best


def _negated(before: str, lex: Lexicon) -> bool:
    """A negator ends right before the cue (after degree words), and is not an A-not-A question."""
    stripped = before
    for degree in (*lex.strong, *lex.weak):
        if stripped.endswith(degree):   # "特别" ends in the negator 别: strip the degree word first
            stripped = stripped[: -len(degree)]
            break
    if _QUESTION.search(stripped[-4:]):
        return False   # 会不会 / 是不是 / 有没有 (A-not-A): a question, not a denial
    return any(stripped.endswith(neg) for neg in lex.negators)


def _degree(before: str, clause: str, lex: Lexicon) -> float:
    window = before[-_DEGREE_WINDOW:]
    scale = 1.0
    if any(w in window for w in lex.weak):
        scale = lex.weak_scale
    elif any(w in window for w in lex.strong):
        scale = lex.strong_scale
    if "!" in clause or "！" in clause:
        scale *= 1.15
    return scale


def _response(kind: str, subject: str, negated: bool, cue: str) -> tuple[str | None, str]:
    """Her response to an event of `kind` happening to `subject`, and the subject as she takes it."""
    if kind in ("hostile", "kind") and ("你" in cue or subject in ("user", "her")):
        subject = "her"   # hostile or kind words with no other target are addressed to her ("滚", "谢谢")
    if negated:
        if kind in ("misfortune", "hostile"):
            return None, subject
        return ("hurt" if kind == "kind" else "concern"), subject
    if subject == "her":
        return {"misfortune": "own", "good": "warmth", "kind": "warmth", "hostile": "hurt"}[kind], subject
    if kind in ("misfortune", "hostile"):
        return "concern", subject
    return ("gladness" if kind == "good" else "warmth"), subject


def read_events(text: str | None) -> list[Reading]:
    """Every event cue in the user's line, with whom it concerns and her response."""
    if not text:
        return []
    lex = lexicon()
    readings: list[Reading] = []
    for clause in _CLAUSE.split(_mask(text, lex.ignore)):
        for start, cue, event in _find_cues(clause, lex):
            before = clause[:start]
            subject = _subject(before, lex)
            if cue in event.close_only and subject not in ("close", "other"):
                continue
            negated = _negated(before, lex)
            if event.kind == "hostile" and "你" not in cue and "你" not in before and "我" in before:
                # "我真蠢", "我好没用": the user running himself down is distress, not an attack on her;
                # "我把垃圾倒了": a hostile word about a thing is no news.
                if not _SELF_BLAME.search(before):
                    continue
                response = None if negated else "concern"
            elif event.kind in ("hostile", "kind") and "你" in before:
                response, subject = _response(event.kind, "her", negated, cue)
            else:
                response, subject = _response(event.kind, subject, negated, cue)
            scale = event.severity * _degree(before, clause, lex) * lex.subject_scale[subject]
            if negated and response is not None:
                scale *= lex.negated_good_scale
            readings.append(Reading(cue, event.name, event.kind, subject, negated, response, min(1.0, scale)))
    return readings


def text_push(text: str | None) -> Push:
    """Mean of her responses to the events in the user's line (0, 0, 0 when there is no news)."""
    lex = lexicon()
    pushes = [tuple(x * r.scale for x in lex.responses[r.response]) for r in read_events(text) if r.response]
    if not pushes:
        return (0.0, 0.0, 0.0)
    n = len(pushes)
    return (sum(p[0] for p in pushes) / n, sum(p[1] for p in pushes) / n, sum(p[2] for p in pushes) / n)


def classify(text: str | None) -> str:
    """Her dominant response to the line ("neutral" when there is no news): the label the tests score."""
    weight: dict[str, float] = {}
    for r in read_events(text):
        if r.response is not None:
            weight[r.response] = weight.get(r.response, 0.0) + r.scale
    if not weight:
        return "neutral"
    return max(weight, key=lambda k: weight[k])
