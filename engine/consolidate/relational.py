"""Relational cues: which sentences of the user's are a ritual, nickname, inside joke, pattern or taboo.

The vocabulary is closed and lives in engine/data/relational.toml (its header gives the rules).
Detection is by regular expression over the user's own sentence, plus one structural detector
for inside jokes: a short phrase the companion coined in quotes that the user later repeats.
Each match carries a `value` (what the entry is about, its identity) and, for kinds where only
one can hold at a time, a `slot` (a newer value in the same slot supersedes the older one).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.consolidate.plan import content
from engine.errors import ConfigError
from engine.store import relations as relation_store

KINDS = ("ritual", "nickname", "inside_joke", "pattern", "taboo")
# A phrase she put in quotes: 2-12 characters between matching quote marks.
_QUOTED = re.compile(r"'([^'\n]{2,12})'|‘([^’\n]{2,12})’|“([^”\n]{2,12})”|「([^」\n]{2,12})」|『([^』\n]{2,12})』"
                     r"|\"([^\"\n]{2,12})\"")
MIN_PHRASE_CHARS = 3  # shorter quoted bits ("嗯", "好的") are words, not jokes


@dataclass(frozen=True)
class RelRule:
    kind: str
    about: str
    regex: re.Pattern[str]
    also: re.Pattern[str] | None = None
    exclude: re.Pattern[str] | None = None
    slot: str = ""


@dataclass(frozen=True)
class RelMatch:
    kind: str
    slot: str  # "" when the kind never supersedes
    value: str  # normalised identity ("小林", "那个长长的"); "" when the rule has none


Patterns = tuple[re.Pattern[str], re.Pattern[str] | None, re.Pattern[str] | None]


def _kind_and_patterns(entry: dict[str, Any], table: str, source: str) -> tuple[str, Patterns]:
    """One [[rule]] or [[lift]] entry checked: a known kind, and `regex` (with `also`, `exclude`) compiling."""
    kind = entry.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{source}: {table} kind {kind!r} is not one of {', '.join(KINDS)}")
    try:
        optional = [re.compile(entry[key]) if entry.get(key) else None for key in ("also", "exclude")]
        return kind, (re.compile(entry["regex"]), optional[0], optional[1])
    except KeyError:
        raise ConfigError(f"{source}: every [[{table}]] needs a regex (kind {kind})") from None
    except re.error as exc:
        raise ConfigError(f"{source}: a {kind} {table} has a bad regular expression: {exc}") from None


def parse_rules(raw: dict[str, Any], source: str = "relational.toml") -> tuple[RelRule, ...]:
    """Validate the catalogue once: known kinds, compilable expressions."""
    rules = []
    for entry in raw.get("rule", []):
        kind, (regex, also, exclude) = _kind_and_patterns(entry, "rule", source)
        rules.append(RelRule(kind=kind, about=str(entry.get("about", "")), regex=regex, also=also, exclude=exclude,
                             slot=str(entry.get("slot", ""))))
    if not rules:
        raise ConfigError(f"{source}: no [[rule]] entries")
    return tuple(rules)


@dataclass(frozen=True)
class LiftRule:
    kind: str  # what it lifts (taboo)
    regex: re.Pattern[str]
    exclude: re.Pattern[str] | None = None


def parse_lifts(raw: dict[str, Any], source: str = "relational.toml") -> tuple[LiftRule, ...]:
    """The [[lift]] rules: each names the kind it ends and an expression with a `value` group."""
    lifts = []
    for entry in raw.get("lift", []):
        kind, (regex, _, exclude) = _kind_and_patterns(entry, "lift", source)
        if "value" not in regex.groupindex:
            raise ConfigError(f"{source}: a {kind} lift needs a (?P<value>...) group: what it lifts")
        lifts.append(LiftRule(kind, regex, exclude))
    return tuple(lifts)


@cache
def _catalogue() -> dict[str, Any]:
    return tomllib.loads((resources.files("engine") / "data" / "relational.toml").read_text(encoding="utf-8"))


@cache
def rules() -> tuple[RelRule, ...]:
    return parse_rules(_catalogue())


@cache
def lift_rules() -> tuple[LiftRule, ...]:
    return parse_lifts(_catalogue())


def detect_lifts(text: str, catalogue: Sequence[LiftRule] | None = None) -> list[RelMatch]:
    """What the sentence takes back ("现在可以提他了" -> taboo 提他): at most one per kind, first rule wins."""
    found: dict[str, RelMatch] = {}
    for rule in catalogue if catalogue is not None else lift_rules():
        if rule.kind in found:
            continue
        match = rule.regex.search(text)
        if match is None or (rule.exclude is not None and rule.exclude.search(text)):
            continue
        value = content(match.group("value") or "")
        if value:
            found[rule.kind] = RelMatch(rule.kind, "", value)
    return list(found.values())


def quoted_phrases(text: str) -> list[str]:
    """The phrases a message puts in quotes (long enough to be a coinage)."""
    found = []
    for match in _QUOTED.finditer(text):
        phrase = next(g for g in match.groups() if g is not None).strip()
        if len(content(phrase)) >= MIN_PHRASE_CHARS:
            found.append(phrase)
    return found


def detect(text: str, coined: Iterable[str] = (), catalogue: Sequence[RelRule] | None = None) -> list[RelMatch]:
    """Every relational kind the sentence states (at most one match per kind, first rule wins).

    `coined` are phrases she put in quotes before this sentence was said; one repeated here is an
    inside joke. Pure: the caller decides which phrases count (earlier, not echoes).
    """
    matches: dict[str, RelMatch] = {}
    for rule in catalogue if catalogue is not None else rules():
        if rule.kind in matches:
            continue
        found = rule.regex.search(text)
        if found is None or (rule.also is not None and rule.also.search(text) is None):
            continue
        if rule.exclude is not None and rule.exclude.search(text):
            continue
        groups = found.groupdict()
        slot = rule.slot or content(groups.get("slot") or "")
        value = content(groups.get("value") or "") or content(found.group(0))
        matches[rule.kind] = RelMatch(rule.kind, slot, value)
    if "inside_joke" not in matches:
        squashed = content(text)
        for phrase in coined:
            key = content(phrase)
            # Her whole reply quoted back is not a joke; a coinage is a part of what he says.
            if len(key) >= MIN_PHRASE_CHARS and key in squashed and key != squashed:
                matches["inside_joke"] = RelMatch("inside_joke", "", key)
                break
    return [matches[k] for k in KINDS if k in matches]


def coined_phrases(conn: Any) -> list[tuple[float, str]]:
    """(when she said it, phrase) for every phrase she quoted in a sent, non-echo reply, oldest first."""
    out: list[tuple[float, str]] = []
    for row in relation_store.companion_quotes(conn):
        out.extend((float(row["ts"]), phrase) for phrase in quoted_phrases(row["text"]))
    return out


def relation_rows(conn: Any, as_of: float | None = None, include_history: bool = False) -> list[Any]:
    if include_history:
        return relation_store.all_relations(conn)
    if as_of is None:
        return relation_store.active_relations(conn)
    return relation_store.relations_as_of(conn, as_of)


def list_relations(conn: Any, as_of: float | None = None, include_history: bool = False) -> list[dict[str, Any]]:
    """Active relational entries (or those true at `as_of`); with include_history, every one ever written."""
    return [{"id": row["id"], "kind": row["kind"], "statement": row["statement"], "status": row["status"],
             "valid_from": row["valid_from"], "valid_to": row["valid_to"], "recorded_at": row["recorded_at"],
             "superseded_by": row["superseded_by"], "evidence": json.loads(row["evidence_json"]),
             "ended_by": json.loads(row["ended_evidence_json"] or "[]")}
            for row in relation_rows(conn, as_of, include_history)]


RELATIONSHIP_LIMIT = 12


def relationship_view(conn: Any, limit: int = RELATIONSHIP_LIMIT) -> list[dict[str, Any]]:
    """The relationship's standing entries for the next reply: every active taboo, then the newest others.

    Not ranked against the query: what to call the user, their rituals and what never to bring up
    matter in every reply, whatever was just asked, so /v1/context carries them beside the recalled
    memories instead of letting them compete for the memory budget.
    """
    return [{"relation_id": row["id"], "kind": row["kind"], "statement": row["statement"],
             "valid_from": row["valid_from"]}
            for row in relation_store.relations_for_reply(conn, limit)]
