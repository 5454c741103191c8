"""The words of consolidation: candidates, fact entries, operations and plans, and the same-fact test."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

ACTIONS = ("added", "merged", "superseded")

# A fact's numbers are part of its identity: "每天吃10mg" is not "每天吃100mg" however close the vectors.
_NUMBER = re.compile(r"\d+(?:\.\d+)?|[零一二两三四五六七八九十百千万亿]+")
_NOT_CONTENT = re.compile(r"[\W_]+", re.UNICODE)
# Leading acknowledgements that restate rather than add ("对，我住在闵行" is "我住在闵行").
_NEGATIONS = ("不", "没", "别", "未", "无", "非", "否")
MIN_LENGTH_RATIO = 0.6
_FILLER = re.compile(r"^(?:对|嗯|是的|是啊|没错|对的|哈哈|啊)+")


@dataclass(frozen=True)
class Candidate:
    """One thing to remember: a gated episode (or a group of near-duplicate ones), keyed by lineage."""

    cid: str  # "c1": the id the operator and the validator use
    episode_ids: tuple[int, ...]
    subject: str  # "user" (what the user said) or "companion" (her told life)
    key: str  # lineage key or "none"
    text: str  # the source sentence, verbatim
    ts: float  # when it was said: the fact's valid_from
    date: str  # the speaker's calendar date, for the statement
    vector: np.ndarray = field(repr=False, compare=False)
    importance: float = 5.0


@dataclass(frozen=True)
class Entry:
    """An active fact as the operator sees it: from the database ("e12") or written earlier this run ("n3")."""

    eid: str
    fact_id: int | None
    subject: str
    key: str
    statement: str
    sentence: str  # the source sentence inside the statement, for same-fact tests
    valid_from: float
    vector: np.ndarray = field(repr=False, compare=False)
    evidence: tuple[int, ...] = ()


@dataclass(frozen=True)
class Operation:
    cid: str
    action: str
    priors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    operations: tuple[Operation, ...]
    operator: str  # "rules" or "model"


@lru_cache(maxsize=65536)  # a pass compares every candidate with every active fact: normalise each text once
def numbers(text: str) -> tuple[str, ...]:
    return tuple(sorted(_NUMBER.findall(unicodedata.normalize("NFKC", text))))


@lru_cache(maxsize=65536)
def content(text: str) -> str:
    squashed = _NOT_CONTENT.sub("", unicodedata.normalize("NFKC", text).lower())
    return _FILLER.sub("", squashed)


def same_fact(a: str, b: str, cosine: float, min_cosine: float = 0.95, min_containment: float = 0.85) -> bool:
    """Do two sentences state the same fact? Same numbers, and the same words (or near: one contains the other).

    Embeddings alone cannot decide: "我住在闵行" and "我住在徐汇" are 0.97 apart in e5. So the test is
    lexical first (characters of the shorter mostly inside the longer) and the vector only confirms.
    """
    if numbers(a) != numbers(b):
        return False
    ca, cb = content(a), content(b)
    if ca == cb:
        return True
    if not ca or not cb or cosine < min_cosine:
        return False
    if _negated(ca) != _negated(cb):
        return False  # "我不怕蛇了" contains every character of "我怕蛇" and says the opposite
    short, long_ = (ca, cb) if len(ca) <= len(cb) else (cb, ca)
    if len(short) < MIN_LENGTH_RATIO * len(long_):
        return False  # the longer one says more: a new detail is not the same fact
    inside = sum(1 for ch in set(short) if ch in long_)
    return inside / len(set(short)) >= min_containment


def _negated(text: str) -> bool:
    return any(word in text for word in _NEGATIONS)


