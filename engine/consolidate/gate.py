"""The rule gate: which unconsolidated episodes may become facts, and near-duplicate grouping of those that may.

Rules (each rejection has a reason the report counts): only what the user said in chat or what
she told of her own life (self_life with told=1); never a reply of hers (it restates, and it is
where injected memory comes back as an echo); never an echo of injected text; never system or
heartbeat noise; never a question (asking where one lives is not a fact about it); never below
the salience floor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.consolidate.plan import same_fact

SYSTEM_PREFIXES = ("[system]", "[heartbeat]", "[系统]", "[心跳]", "/")
SYSTEM_ORIGINS = ("system", "heartbeat")
MIN_CONTENT_CHARS = 4
_QUESTION_END = re.compile(r"[?？]\s*$|[吗呢么嘛][\s。.～~]*$")
_QUESTION_WORDS = ("什么", "哪里", "哪儿", "在哪", "住哪", "谁", "几点", "怎么", "多少", "为什么", "是不是", "有没有",
                   "记得吗", "来着")
_CONTENT = re.compile(r"[\w]", re.UNICODE)


@dataclass(frozen=True)
class Episode:
    id: int
    source: str  # chat | self_life
    role: str | None
    text: str
    ts: float
    ts_iso: str | None
    salience: float
    importance: float
    echo_of_injection: str | None
    message_status: str | None
    message_origin: str | None
    told: int | None

    @classmethod
    def from_row(cls, row: Any) -> Episode:
        return cls(id=row["id"], source=row["source"], role=row["role"], text=row["raw"], ts=row["ts"],
                   ts_iso=row["ts_iso"], salience=row["salience"], importance=row["importance"],
                   echo_of_injection=row["echo_of_injection"], message_status=row["message_status"],
                   message_origin=row["message_origin"], told=row["told"])


def is_question(text: str) -> bool:
    stripped = text.strip()
    return bool(_QUESTION_END.search(stripped)) or any(word in stripped for word in _QUESTION_WORDS)


def gate_reason(episode: Episode, salience_floor: float) -> str | None:
    """None if the episode may become a fact, else why not (a short stable word for the report)."""
    if episode.source == "self_life":
        if episode.told != 1:
            return "untold_life"
    elif episode.source == "chat":
        if episode.message_status != "sent":
            return "not_sent"
        if episode.role != "user":
            return "companion_reply"
        if (episode.message_origin or "") in SYSTEM_ORIGINS:
            return "system"
    else:
        return "unknown_source"
    if episode.echo_of_injection:
        return "echo"
    text = episode.text.strip()
    if text.lower().startswith(SYSTEM_PREFIXES):
        return "system"
    if len(_CONTENT.findall(text)) < MIN_CONTENT_CHARS:
        return "too_short"
    if is_question(text):
        return "question"
    if episode.salience < salience_floor:
        return "low_salience"
    return None


def group_near_duplicates(texts: Sequence[str], vectors: np.ndarray, min_cosine: float = 0.95) -> list[list[int]]:
    """Group indices (in time order) whose sentences state the same fact; each group keeps its first as leader."""
    groups: list[list[int]] = []
    for index, text in enumerate(texts):
        for group in groups:
            leader = group[0]
            if same_fact(texts[leader], text, float(vectors[leader] @ vectors[index]), min_cosine):
                group.append(index)
                break
        else:
            groups.append([index])
    return groups
