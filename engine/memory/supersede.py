"""Supersession: for a question about the present, a newer statement of the same slot outranks the older one.

"我搬到合肥了" after "我在南京租房" must answer "我现在在哪" although the stale turn usually shares
more words with the question. A plain recency decay cannot do this without burying every old
memory, so this is a ranking step that moves only the newer hit of a pair: a newer hit of the same
slot (the same single-valued fact at two times) ranked below an older one is lifted just above it.
Questions about the past ("以前", "刚认识的时候", "当初") are left as ranked, and `--as-of` never sees the
newer turn at all. It runs after MMR (which re-sorts by score) and before the time window's order.

What counts as the same slot (`same_slot`):
- a shared lineage family (engine/memory/lineage.py: home, job, pet ...), what consolidation knows;
- or a shared informative word (general IDF >= `slot_idf`: 公斤, 到手, 上班, 租 ...) between the two
  statements. A passage cosine is no evidence: e5 puts two random turns of one user at 0.89 (median)
  and an update pair at 0.88-0.95, the same range.
Both need the two turns in different conversations (further apart than `session_gap_s`: the turn 30 s
later is no update) and the newer one itself relevant (relevance >= `min_ratio` of the older one's).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Protocol, TypeVar

from engine.memory.tokens import term_idf, word_tokens

# Words that ask about the present state (now, lately, still, yet): the newest statement on a slot answers them.
# Generic particles (还是, 了吗, 没有) are left out: in a running dialogue they are everywhere (MADial-Bench lost 2 points).
NOW_CUES = ("现在", "最近", "目前", "如今", "这阵子", "近来", "还在", "了没", "今年", "now", "currently", "lately",
            "these days", "still", "anymore", "latest", "recently")
# 还 before a verb in a question's last clause asks whether a state still holds ("我还抽烟不"); not 还是 (or),
# 还有 (also), 还记得 (remember), and not in a statement ("我还很喜欢听音乐": a fifth of MemoryBank's user lines hold 还).
_STILL = re.compile("还(?![是有记要没好行可])[^，,。.！!？?]*(?:吗|不|没|没有|呢|[?？])$")
# Markers of a question about the past: the old statement is the answer, nothing is superseded.
PAST_MARKERS = ("以前", "之前", "原来", "当初", "刚认识", "那时", "那会", "过去", "曾经", "上次", "第一次", "小时候",
                "去年", "从前", "来着", "used to", "before", "back then", "first time", " ago")
# A completed event ("我去哪玩了", "我吃过什么"): not a question about a present state.
_EVENT = re.compile("[了过](?![没吗])")


def asks_about_past(query: str) -> bool:
    """Whether a question names the past (以前, 当初, 刚认识的时候 ...): then the old statement may be the answer."""
    lowered = query.lower()
    return any(m in lowered for m in PAST_MARKERS)


def asks_about_now(query: str, tail_chars: int = 40) -> bool:
    """Whether a one-line question asks about the present by a cue word (现在, 最近, 还 + verb ...) near its end.

    A multi-line query is dialogue context, not a question about her user's current state: on
    MADial-Bench the cue words of running dialogue (现在, 最近) cost 2 points of Recall@5.
    """
    if "\n" in query.strip() or asks_about_past(query):
        return False
    tail = query[-tail_chars:].lower()
    return any(cue in tail for cue in NOW_CUES) or bool(_STILL.search(tail.strip()))


def asks_about_present(query: str, about_self: bool, has_window: bool, present_default: bool) -> bool:
    """Whether supersession applies: a present cue, or (with `present_default`) a question about the user
    himself that names no time, no past and no completed event ("我一个月到手多少"): a state is asked
    about as it is now unless the question says otherwise."""
    if asks_about_now(query):
        return True
    if not present_default or not about_self or has_window or asks_about_past(query):
        return False
    return not _EVENT.search(query)


class Ranked(Protocol):
    @property
    def relevance(self) -> float: ...


R = TypeVar("R", bound=Ranked)


@lru_cache(maxsize=4096)
def slot_words(text: str, min_idf: float) -> frozenset[str]:
    """The informative words of a statement (general IDF >= `min_idf`); numbers and dates are left out
    (the value that changes, or a fact's date prefix, is no slot). Remembered per text: the head of one
    question's hits is keyed twice, and the same memories head the next questions too."""
    return frozenset(w for w in word_tokens(text) if not any(ch.isdigit() for ch in w) and term_idf(w) >= min_idf)


def same_slot(a_ts: float, b_ts: float, a_families: AbstractSet[str], b_families: AbstractSet[str],
              a_words: AbstractSet[str], b_words: AbstractSet[str], session_gap_s: float) -> bool:
    """Whether two statements state one single-valued fact at two different times (see the module docstring).

    `*_words` are each statement's informative words (IDF >= slot_idf); pass empty sets to judge by
    lineage alone.
    """
    if abs(b_ts - a_ts) < session_gap_s:
        return False
    return bool(a_families & b_families) or bool(a_words & b_words)


def reachable(ranked: Sequence[R], min_ratio: float, depth: int, reach: int, ts: Callable[[R], float],
              shares: Callable[[R], bool] | None = None) -> list[R]:
    """The hits `supersede` may compare: the first `depth`, and those down to `reach` that could be lifted
    above one of them (newer than the oldest of the head, relevance >= `min_ratio` of the least relevant,
    and `shares`: e.g. a stored token among the head's slot words, a set lookup).

    The slot rule segments and keys only these: the hits below the head that could never move stay unread
    (keying every hit of the pool cost 2.5 ms of CPU per present question at 100k memories).
    """
    head = list(ranked[:depth])
    if not head:
        return []
    oldest = min(ts(a) for a in head)
    weakest = min(a.relevance for a in head)
    return head + [b for b in ranked[depth:reach] if ts(b) > oldest and b.relevance >= min_ratio * weakest
                   and (shares is None or shares(b))]


def supersede(ranked: Sequence[R], same: Callable[[R, R], bool], min_ratio: float, depth: int,
              ts: Callable[[R], float], reach: int | None = None) -> list[R]:
    """Lift the newest relevant hit of a slot, from the first `reach` (default `depth`), to just above the
    oldest-ranked older hit of that slot among the first `depth` (`ts` gives a hit's time).

    Only the newer hit moves, and only up: everything between keeps its order and moves one place
    down, so a stale statement stays close behind (it is evidence of what changed) and no other hit
    leaves the top k. The newer hit must itself be relevant (relevance >= `min_ratio` of the older
    one's), so a passing mention does not displace the statement the question is about.

    Why `reach` goes past the head (issue 27): the stale statement usually shares more of the question's
    words and meaning than its update ("每天骑电驴上班" vs "提车了…以后上班不用挤地铁了"), so the update may
    sit far below the head (36th on zh-dev2) although it is in the candidate pool. Which hits may move is
    still decided by the slot and the relevance share, never by the rank. Measured and not kept: searching
    the head's slot words again in the keyword lane for newer statements the pool lacks (zh-dev2 R@1 71.62
    vs 72.97, x5 padded R@5 79.50 vs 81.31, x20 70.72 vs 72.07; no update gained on any set).
    """
    items = list(ranked)
    limit = depth if reach is None else max(depth, reach)
    at = 0
    while at < min(depth, len(items)):
        a = items[at]
        newer = [b for b in items[at + 1:limit]
                 if ts(b) > ts(a) and b.relevance >= min_ratio * a.relevance and same(a, b)]
        if newer:
            lifted = max(newer, key=ts)
            items.remove(lifted)
            items.insert(at, lifted)
        at += 1
    return items
