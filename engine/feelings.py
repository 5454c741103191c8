"""Her discrete feelings with causes (issue 24): raised by appraised events, fading, pulling her mood; pure functions.

Between the fast emotion and the slow mood of engine/mood.py sits what a person would name: 难过 after the
user's grandmother died, 委屈 after a client's third round of revisions, 畅快 after a run. After the OCC
model's emotion types (Ortony, Clore & Collins 1988) and ALMA's layering (Gebhard 2005), each event raises
named feelings (rules as data, engine/data/feelings.toml) that fade exponentially with their own half-life
(grief for days, the glow of a run for hours). Their PAD directions, weighted by intensity, are the targets
the mood layer drifts toward (`pad_pull`), so a grief turn lowers tomorrow evening and not only tonight; the
strongest of them are her words for how she feels (`words_zh`) and colour her narration.

A feeling is a small JSON-shaped dict {"name", "i", "at", "cause", "since"} (intensity i at instant at, last
raised at since), so the list
saves with her day state as it is. Nothing here holds chat text: a cause is a category phrase from the data
file ("你家里人走了的事"), never the user's words.
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.errors import ConfigError

SIGNS = ("pos", "neg", "hostile")
Feeling = dict[str, Any]   # {"name": str, "i": float, "at": float, "cause": str, "since": float (last raised)}
Pad = tuple[float, float, float]


@dataclass(frozen=True)
class Kind:
    """One named feeling: its Chinese word, PAD direction, half-life and how it reads."""

    name: str
    name_zh: str
    pad: Pad
    half_life_h: float
    sign: str


@dataclass(frozen=True)
class Rule:
    """What an event raises: feeling -> weight, and how she names the cause."""

    raise_: tuple[tuple[str, float], ...]
    cause_zh: str
    kinds: frozenset[str] = frozenset()
    outcome: str = "done"
    chance: float = 1.0
    energy_below: float = math.inf
    say_cause: bool = True
    role_cause: str = ""  # "good" / "bad": her role may name the cause in its own words (roles.toml)


@dataclass(frozen=True)
class Table:
    kinds: dict[str, Kind]
    target_gain: float
    floor: float
    max_words: int
    turn_response: dict[str, Rule]
    turn_event: dict[str, Rule]
    activity: tuple[Rule, ...]
    waking_tired_per_short_h: float
    waking_cause_zh: str
    waking_rests: frozenset[str]
    activity_tone: dict[str, tuple[float, float]]

    @property
    def quiet_causes(self) -> frozenset[str]:
        """Causes her narration does not say as a clause (say_cause = false)."""
        return frozenset(r.cause_zh for r in self.activity if not r.say_cause)


def _known(names: Iterable[str], known: Mapping[str, Kind], where: str) -> frozenset[str]:
    """`names` as a set; the first that is not a feeling of the table is a ConfigError naming it."""
    listed = [str(n) for n in names]
    unknown = [n for n in listed if n not in known]
    if unknown:
        raise ConfigError(f"feelings.toml {where}: unknown feeling {unknown[0]!r}")
    return frozenset(listed)


def _rule(raw: Mapping[str, Any], known: Mapping[str, Kind], where: str) -> Rule:
    raises = tuple((str(k), float(v)) for k, v in raw["raise"].items())
    _known((k for k, _ in raises), known, where)
    if raw.get("role_cause", "") not in ("", "good", "bad"):
        raise ConfigError(f"feelings.toml {where}: role_cause must be \"good\" or \"bad\", got {raw['role_cause']!r}")
    return Rule(raise_=raises, cause_zh=str(raw["cause_zh"]), kinds=frozenset(raw.get("kinds", ())),
                outcome=str(raw.get("outcome", "done")), chance=float(raw.get("chance", 1.0)),
                energy_below=float(raw.get("energy_below", math.inf)), say_cause=bool(raw.get("say_cause", True)),
                role_cause=str(raw.get("role_cause", "")))


def parse(raw: Mapping[str, Any]) -> Table:
    """The feelings table from its TOML; a malformed file is a ConfigError naming what is wrong."""
    try:
        kinds = {name: Kind(name, str(k["name_zh"]), (float(k["pad"][0]), float(k["pad"][1]), float(k["pad"][2])),
                            float(k["half_life_h"]), str(k["sign"])) for name, k in raw["feeling"].items()}
        for kind in kinds.values():
            if kind.sign not in SIGNS or kind.half_life_h <= 0:
                raise ConfigError(f"feelings.toml feeling.{kind.name}: sign must be one of {SIGNS} and "
                                  "half_life_h > 0")
        return Table(
            kinds=kinds, target_gain=float(raw["target_gain"]), floor=float(raw["floor"]),
            max_words=int(raw["max_words"]),
            turn_response={k: _rule(v, kinds, f"turn_response.{k}") for k, v in raw["turn_response"].items()},
            turn_event={k: _rule(v, kinds, f"turn_event.{k}") for k, v in raw["turn_event"].items()},
            activity=tuple(_rule(v, kinds, f"activity[{i}]") for i, v in enumerate(raw["activity"])),
            waking_tired_per_short_h=float(raw["waking"]["tired_per_short_h"]),
            waking_cause_zh=str(raw["waking"]["cause_zh"]),
            waking_rests=_known(raw["waking"].get("rests", ()), kinds, "waking.rests"),
            activity_tone={k: (float(v[0]), float(v[1])) for k, v in raw["activity_tone"].items()},
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ConfigError(f"engine/data/feelings.toml is malformed ({exc!r}); see its header") from exc


@cache
def table() -> Table:
    """The bundled table, loaded and checked once."""
    text = (resources.files("engine") / "data" / "feelings.toml").read_text(encoding="utf-8")
    return parse(tomllib.loads(text))


# --- equations ----------------------------------------------------------------------------------------------------


def _faded(i: float, dt_s: float, half_life_h: float) -> float:
    """i * 2^(-dt / half-life); a negative dt undoes fading."""
    return i * math.exp(-math.log(2.0) * dt_s / (half_life_h * 3600.0))


def _since(feeling: Feeling) -> float:
    """When it was last raised (older stored feelings have no `since`: their `at`)."""
    return float(feeling["since"] if "since" in feeling else feeling["at"])


def intensity_at(feeling: Feeling, now: float, half_life_h: float) -> float:
    """i * 2^(-(now - at) / half-life): exponential fading, exact over any gap."""
    return _faded(float(feeling["i"]), max(0.0, now - float(feeling["at"])), half_life_h)


def raised_to(feeling: Feeling, tab: Table | None = None) -> float:
    """How strong `feeling` was just after its last raise (`since`): its fading undone back to then."""
    kind = (tab or table()).kinds.get(str(feeling.get("name")))
    if kind is None:
        return float(feeling["i"])
    return _faded(float(feeling["i"]), -max(0.0, float(feeling["at"]) - _since(feeling)), kind.half_life_h)


def combine(old: float, add: float) -> float:
    """Two raises of one feeling: 1 - (1 - old)(1 - add), so a second blow adds less and never passes 1."""
    return 1.0 - (1.0 - min(1.0, max(0.0, old))) * (1.0 - min(1.0, max(0.0, add)))


def current(feelings: Sequence[Feeling], now: float, tab: Table | None = None) -> list[Feeling]:
    """The feelings still felt at `now` (faded to now), strongest first; those under the floor are dropped."""
    tab = tab or table()
    out = []
    for f in feelings:
        kind = tab.kinds.get(str(f.get("name")))
        if kind is None:
            continue   # a feeling a newer table renamed: forgotten rather than misread
        i = intensity_at(f, now, kind.half_life_h)
        if i >= tab.floor:
            out.append({"name": kind.name, "i": round(i, 4), "at": now, "cause": f.get("cause", ""),
                        "since": _since(f)})
    return sorted(out, key=lambda f: (-f["i"], f["name"]))


def raise_all(feelings: Sequence[Feeling], raises: Iterable[tuple[str, float]], cause: str, now: float,
              tab: Table | None = None) -> list[Feeling]:
    """Add `raises` (feeling -> intensity) with `cause` at `now`; a raise bigger than what is left takes the cause."""
    tab = tab or table()
    by_name = {f["name"]: f for f in current(feelings, now, tab)}
    for name, add in raises:
        if add <= 0 or name not in tab.kinds:
            continue
        old = by_name.get(name)
        i0 = float(old["i"]) if old is not None else 0.0
        keep_cause = old is not None and i0 >= add
        by_name[name] = {"name": name, "i": round(combine(i0, add), 4), "at": now,
                         "cause": old["cause"] if keep_cause and old else cause, "since": now}
    return sorted(by_name.values(), key=lambda f: (-f["i"], f["name"]))


def pad_pull(feelings: Sequence[Feeling], now: float, tab: Table | None = None) -> Pad:
    """The pull of her feelings on the mood layer: target_gain * sum(intensity * PAD direction), per dimension."""
    tab = tab or table()
    v = a = d = 0.0
    for f in feelings:
        kind = tab.kinds.get(str(f.get("name")))
        if kind is None:
            continue
        i = intensity_at(f, now, kind.half_life_h)
        v, a, d = v + i * kind.pad[0], a + i * kind.pad[1], d + i * kind.pad[2]
    g = tab.target_gain
    return (g * v, g * a, g * d)


def activity_tone(category: str, tab: Table | None = None) -> tuple[float, float]:
    """The (arousal, dominance) target of what she is doing (a run lifts both, sleep lowers arousal)."""
    return (tab or table()).activity_tone.get(category, (0.0, 0.0))


def strongest(feelings: Sequence[Feeling], now: float, tab: Table | None = None) -> Feeling | None:
    """The strongest feeling at now, or None."""
    felt = current(feelings, now, tab)
    return felt[0] if felt else None


def sign_of(name: str, tab: Table | None = None) -> str:
    return (tab or table()).kinds[name].sign


def name_zh(name: str, tab: Table | None = None) -> str:
    return (tab or table()).kinds[name].name_zh


def words_zh(feelings: Sequence[Feeling], now: float, tab: Table | None = None) -> list[str]:
    """Her 1-3 words for now, strongest first (a feeling at a third of the strongest or more); [] when none."""
    tab = tab or table()
    felt = current(feelings, now, tab)
    if not felt:
        return []
    top = float(felt[0]["i"])
    return [tab.kinds[f["name"]].name_zh for f in felt if float(f["i"]) >= top / 3.0][: tab.max_words]


def label_en(feelings: Sequence[Feeling], now: float, tab: Table | None = None) -> str | None:
    """The English mood label when a named feeling stands out (its key: "sad", "let down"), else None.

    The PAD octant label alone called her "slightly disdainful" right after the user's grandmother died (issue
    23): the feeling with its cause is the truer word, so the compatibility field follows it when there is one."""
    felt = current(feelings, now, tab or table())
    return str(felt[0]["name"]).replace("_", " ") if felt else None


def shown(feelings: Sequence[Feeling], now: float, tab: Table | None = None) -> list[dict[str, Any]]:
    """The feelings as /v1/state shows them: [{"name_zh", "intensity", "cause"}], strongest first."""
    tab = tab or table()
    return [{"name_zh": tab.kinds[f["name"]].name_zh, "intensity": round(float(f["i"]), 3), "cause": f["cause"]}
            for f in current(feelings, now, tab)]


# --- rules --------------------------------------------------------------------------------------------------------


def turn_raises(readings: Iterable[Any], tab: Table | None = None) -> list[tuple[list[tuple[str, float]], str]]:
    """Per appraised reading of a user's line (engine.appraisal.Reading): (feeling raises, cause)."""
    tab = tab or table()
    out = []
    for r in readings:
        if r.response is None:
            continue
        rule = tab.turn_event.get(r.event) if r.response == "concern" or r.kind == "good" else None
        rule = rule or tab.turn_response.get(r.response)
        if rule is None:
            continue
        out.append(([(name, w * float(r.scale)) for name, w in rule.raise_], rule.cause_zh))
    return out


def affect_raises(push: Pad, tab: Table | None = None) -> list[tuple[list[tuple[str, float]], str]]:
    """A front end's own `affect` (no words read): glad or sad by its valence, as strong as it is."""
    tab = tab or table()
    v = push[0]
    if abs(v) < 0.1:
        return []
    rule = tab.turn_response["gladness" if v > 0 else "concern"]
    return [([(name, w * min(1.0, abs(v))) for name, w in rule.raise_], rule.cause_zh)]


def _draw(seed: str, kind: str, at: float, index: int) -> float:
    digest = hashlib.sha256(f"{seed}|feel|{kind}|{round(at, 3)}|{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def activity_raises(seed: str, kind: str, outcome: str, energy: float, at: float,
                    tab: Table | None = None, role_causes: Mapping[str, Sequence[str]] | None = None,
                    cause_feelings: Mapping[str, str] | None = None) -> list[tuple[list[tuple[str, float]], str]]:
    """What an activity of her own day raises as it ends (seeded: the same life raises the same feelings).

    `role_causes` ("good"/"bad" -> phrases) names a work event in her role's words: a teacher is not upset
    by a client's revisions but by a fight in her class (issue 24 item 7; engine/life/data/roles.toml).
    `cause_feelings` (phrase -> feeling) is the feeling such a cause leaves where the role names one: it
    takes the place of the rule's first, strongest feeling at the same intensity (sorting out a fight in
    her class wears a teacher out; it does not leave her 委屈)."""
    tab = tab or table()
    out = []
    for index, rule in enumerate(tab.activity):
        if rule.outcome != outcome or not (kind in rule.kinds or "*" in rule.kinds):
            continue
        if energy >= rule.energy_below:
            continue
        if rule.chance < 1.0 and _draw(seed, kind, at, index) >= rule.chance:
            continue
        cause, pairs = rule.cause_zh, list(rule.raise_)
        own = role_causes.get(rule.role_cause) if role_causes and rule.role_cause else None
        if own:
            cause = own[int(_draw(seed, kind, at, -1 - index) * len(own))]
            felt = (cause_feelings or {}).get(cause)
            if felt and pairs:
                pairs = [(felt, pairs[0][1]), *(p for p in pairs[1:] if p[0] != felt)]
        out.append((pairs, cause))
        if rule.chance < 1.0:
            break   # one chance event per activity: praised or revised, not both
    return out


def waking_raises(slept_h: float | None, need_h: float, tab: Table | None = None
                  ) -> list[tuple[list[tuple[str, float]], str]]:
    """A short night leaves her tired: tired_per_short_h per hour short of her need, up to 1."""
    tab = tab or table()
    if slept_h is None or not math.isfinite(slept_h) or slept_h >= need_h:
        return []
    return [([("tired", min(1.0, tab.waking_tired_per_short_h * (need_h - slept_h)))], tab.waking_cause_zh)]


def rested(feelings: Sequence[Feeling], tab: Table | None = None) -> list[Feeling]:
    """What a night's sleep leaves of her feelings: those it rests ([waking] rests: tiredness) are gone.

    Yesterday's 忙了一整天 is slept off, not faded; a short night raises tiredness again with its own cause
    (waking_raises), so the morning never names last evening's reason.
    """
    tab = tab or table()
    return [f for f in feelings if f.get("name") not in tab.waking_rests]


def apply_raises(feelings: Sequence[Feeling], raises: Iterable[tuple[list[tuple[str, float]], str]], now: float,
                 tab: Table | None = None) -> list[Feeling]:
    """All of `raises` in order."""
    out = list(feelings)
    for pairs, cause in raises:
        out = raise_all(out, pairs, cause, now, tab)
    return out
