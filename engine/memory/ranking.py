"""Recall ranking equations (after OpenClaw memory-core, MIT): fusion, decay, importance, MMR, floors, strength.

Pure functions over plain values; time is passed in. Upstream files: extensions/memory-core/src/
memory/hybrid.ts (mergeHybridResults), mmr.ts (mmrRerank, Jaccard), temporal-decay.ts
(calculateTemporalDecayMultiplier) and the manager's min_score with keyword fallback. Where anima
departs from upstream the comment says why. The biggest departure: upstream's keyword score is a
saturated BM25 rank, which gives 0.7-0.9 to any row sharing one rare query word and so outweighs
large cosine gaps; anima's keyword score is the share of the query's information (general-corpus
IDF) that a memory contains, a number on the same [0, 1] scale for every query.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from engine.settings import MemorySettings

DAY_S = 86400.0
T = TypeVar("T")


def keyword_coverage(query_weights: Mapping[str, float], doc_terms: AbstractSet[str]) -> float:
    """Share of the query's term weight found in a memory: sum of matched weights / sum of all, in [0, 1].

    Weights are general-corpus IDF (tokens.query_term_weights), so a question word (我 什么 最近 第一)
    weighs little and a name, number or rare word weighs much; the score is calibrated per query
    (1.0 = every informative word of the question is there), unlike a BM25 rank whose size depends on
    the query's length and on how small the history is.
    """
    total = sum(query_weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in query_weights.items() if t in doc_terms) / total


def fuse(vector_score: float, text_score: float, vector_weight: float, text_weight: float) -> float:
    """Weighted fusion normalised by the weight sum (upstream mergeHybridResults)."""
    total = vector_weight + text_weight
    if total <= 0:
        return 0.0
    return (vector_weight * vector_score + text_weight * text_score) / total


def decay_multiplier(age_days: float, half_life_days: float) -> float:
    """exp(-ln2 * age / half_life); a future timestamp (age < 0) counts as age 0 (upstream clamps too)."""
    if half_life_days <= 0 or not math.isfinite(age_days):
        return 1.0
    return math.exp(-math.log(2) / half_life_days * max(0.0, age_days))


def importance_multiplier(importance: float) -> float:
    """0.75 + 0.05 * clamp(importance, 1, 10): from 0.8 (trivial) to 1.25 (life-changing)."""
    return 0.75 + 0.05 * min(10.0, max(1.0, importance))


def importance_from_salience(salience: float) -> float:
    """Salience in [0, 1] to importance in [1, 10]."""
    return 1.0 + 9.0 * min(1.0, max(0.0, salience))


# --- strength and forgetting (spaced repetition) -------------------------------------------------


def retention(age_days: float, half_life_days: float, strength: float) -> float:
    """How easy a memory is to reach after `age_days` unused: a half-life that grows with strength.

    R = 2 ** (-age / (half_life * S)). MemoryBank writes R = exp(-t / S) in its paper, but its
    code divides the other way round, so a stronger memory faded faster; here d R / d S >= 0 for
    every age (property-tested).
    """
    s = max(strength, 1e-6)
    return decay_multiplier(age_days, half_life_days * s)


def recency_weight(age_days: float, half_life_days: float, strength: float, floor: float) -> float:
    """The decay multiplier used in ranking: floor + (1 - floor) * retention.

    Upstream multiplies the score by the bare exponential (and then applies min_score): with a
    30-day half-life a six-month-old memory keeps 1.6 % of its score and falls under any
    threshold, although old memories are exactly what a companion must keep. With a floor the
    oldest relevant memory keeps `floor` of its score; recency then orders near-equals only.
    """
    return floor + (1.0 - floor) * retention(age_days, half_life_days, strength)


def strength_after_recall(strength: float, days_since_last: float, gain: float = 0.5, cap: float = 10.0) -> float:
    """Spaced repetition: a recall after a long gap strengthens more than one right after the last.

    S' = S + gain * (1 - 2 ** (-gap / S)); the gain saturates when the gap is long against S.
    """
    s = max(strength, 1e-6)
    spacing = 1.0 - 2.0 ** (-max(0.0, days_since_last) / s)
    return min(cap, s + gain * max(spacing, 0.05))


# --- candidates, fusion pipeline ------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    memory_id: int
    vector_score: float  # cosine similarity in [-1, 1] (0 when the vector lane did not find it)
    text_score: float  # keyword coverage in [0, 1] (keyword_coverage)
    ts: float
    importance: float = 5.0
    strength: float = 1.0
    last_recalled_at: float | None = None
    pinned: bool = False
    topic: str = ""  # grouping key for near-duplicates/updates (e.g. a normalised text)
    text: str = ""
    relevance: float = 0.0  # fused, before decay and importance
    score: float = 0.0  # final


_TUNED = MemorySettings()  # one source for the tuned constants: config.toml's [memory] defaults


@dataclass(frozen=True)
class RankParams:
    """The ranking constants; defaults are [memory]'s (engine/settings.py), which recall passes from config."""

    vector_weight: float = _TUNED.vector_weight
    text_weight: float = _TUNED.text_weight
    half_life_days: float = _TUNED.decay_half_life_days
    decay_floor: float = _TUNED.decay_floor
    min_score: float = _TUNED.min_score
    mmr_lambda: float = _TUNED.mmr_lambda
    use_decay: bool = True
    use_mmr: bool = True
    use_importance: bool = True
    use_newer: bool = True  # supersession (engine/memory/supersede.py), questions about the present only
    use_newer_pool: bool = True  # supersession: the newer statement may come from the whole candidate pool, not the head
    use_slot_words: bool = True  # supersession: a shared informative word makes a slot, not only a lineage family
    use_present_default: bool = False  # supersession: a question about the user naming no time asks about now (measured: off)
    use_small_talk: bool = True  # the background relevance floor (is_small_talk)
    use_self_question: bool = True  # a question about the user himself is exempt from that floor (asks_about_self)
    use_time: bool = True  # time windows parsed from the question (engine/memory/timeq.py)
    use_lexicon: bool = True  # keyword terms expanded through engine/memory/lexicon.py
    use_hubness: bool = True  # a cosine less the memory's nearness to generic chat (hub_penalties)
    hubness_weight: float = _TUNED.hubness_weight
    # "weighted" (fuse) or "rrf" (rrf_relevance). Weighted ships: RRF with equal weights lost 5.4 R@1 on zh-dev2
    # and 7.7 on zh-dev for +0.16 R@5 on MADial zh (bench/recall_quality.py, row with_rrf).
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: float = 60.0  # RRF's damping constant (Cormack, Clarke & Buettcher 2009 use 60 on every TREC set)
    # A multi-line query (the last turns of a dialogue) weighs the keyword lane this many times text_weight. In a
    # dialogue e5 matches the small talk around the topic (any chat line is near "你有没有什么建议"), the keyword
    # lane only its informative words; both lanes alone are level on MADial-Bench (R@5 55.6 / 54.3).
    dialogue_text_scale: float = _TUNED.dialogue_text_scale


def lane_ranks(values: Sequence[float]) -> list[int]:
    """1-based rank of each value in its lane (higher is better; ties share the better rank); 0 = not in the lane."""
    order = sorted((v for v in values if v > 0), reverse=True)
    first: dict[float, int] = {}
    for i, v in enumerate(order, 1):
        first.setdefault(v, i)
    return [first[v] if v > 0 else 0 for v in values]


def rrf_relevance(ranks: Sequence[int], weights: Sequence[float], k: float) -> float:
    """Reciprocal-rank fusion: sum of w / (k + rank) over the lanes that found the memory, scaled so rank 1
    in every lane is 1.0.

    Ranks, unlike scores, are on one scale in every lane and every query, so no constant weighs a cosine
    against a keyword share (Cormack, Clarke & Buettcher, SIGIR 2009).
    """
    top = sum(w / (k + 1) for w in weights)
    if top <= 0:
        return 0.0
    return sum(w / (k + r) for r, w in zip(ranks, weights, strict=True) if r > 0) / top


def score_candidates(cands: Sequence[Candidate], params: RankParams, now: float) -> list[Candidate]:
    """relevance = fused lanes; score = relevance * recency weight * importance multiplier."""
    out = []
    if params.fusion == "rrf":
        v_ranks = lane_ranks([c.vector_score for c in cands])
        t_ranks = lane_ranks([c.text_score for c in cands])
    for i, c in enumerate(cands):
        if params.fusion == "rrf":
            relevance = rrf_relevance((v_ranks[i], t_ranks[i]), (params.vector_weight, params.text_weight),
                                      params.rrf_k)
        else:
            relevance = fuse(c.vector_score, c.text_score, params.vector_weight, params.text_weight)
        score = relevance
        if params.use_decay and not c.pinned:
            anchor = max(c.ts, c.last_recalled_at or c.ts)
            age_days = (now - anchor) / DAY_S
            score *= recency_weight(age_days, params.half_life_days, c.strength, params.decay_floor)
        if params.use_importance:
            score *= importance_multiplier(c.importance)
        out.append(replace(c, relevance=relevance, score=score))
    out.sort(key=lambda c: (-c.score, -c.ts, c.memory_id))
    return out


def apply_min_score(ranked: Sequence[Candidate], min_score: float, keyword_ids: set[int],
                    text_weight: float) -> list[Candidate]:
    """Keep candidates whose undecayed relevance reaches min_score; if none, the keyword fallback.

    Upstream filters the decayed score; anima filters `relevance` (before decay and importance) so
    age never decides whether a memory counts as relevant. Fallback as upstream: when nothing
    passes but the keyword lane found rows, keep keyword hits with relevance >= min(min_score,
    text_weight) / 2. Upstream uses min(min_score, text_weight), but a saturated bm25 is < 1, so a
    keyword-only hit could never reach it; half is a keyword hit with bm25 rank <= -1.
    """
    strict = [c for c in ranked if c.relevance >= min_score]
    if strict or not keyword_ids:
        return strict
    relaxed = min(min_score, text_weight) / 2
    return [c for c in ranked if c.memory_id in keyword_ids and c.relevance >= relaxed]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def collapse_same_text(ranked: Sequence[Candidate], key: Callable[[Candidate], str]) -> list[Candidate]:
    """Keep the first of candidates with the same key (tokens.same_text_key: the same normalised text).

    The one deletion recall makes: a turn that says exactly what an earlier one said ("我现在住哪？"
    asked twenty times) adds nothing to a context block but length.
    """
    seen: set[str] = set()
    out = []
    for c in ranked:
        k = key(c)
        if k not in seen:
            seen.add(k)
            out.append(c)
    return out


def demote_duplicates(ranked: Sequence[Candidate], key: Callable[[Candidate], str]) -> list[Candidate]:
    """A candidate with the key of a better one (tokens.duplicate_key: the same statement) yields one place.

    Two turns that say the same thing add less than the next hit that says something else, so the
    repeat moves behind that next distinct hit; it is not deleted (recall still returns k hits while
    k candidates pass) and not sent to the end (it is still evidence of what was said, twice). Two
    sentences that merely share a template ("…的时间是…", "…的持续时间是两天") have different keys and
    keep their places.
    """
    seen: set[str] = set()
    out: list[Candidate] = []
    waiting: list[Candidate] = []
    for c in ranked:  # in the order given (after MMR): only repeats move
        k = key(c)
        if k in seen:
            waiting.append(c)
            continue
        seen.add(k)
        out.append(c)
        out.extend(waiting)
        waiting = []
    return out + waiting


def mmr(ranked: Sequence[Candidate], lam: float, tokens: Callable[[Candidate], frozenset[str]],
        limit: int | None = None) -> list[Candidate]:
    """Maximal marginal relevance (upstream mmrRerank): lam * norm(score) - (1 - lam) * max Jaccard.

    Scores are min-max normalised over the candidates (all equal -> 1); ties go to the higher raw
    score. `limit` stops after that many picks (the rest keep their order behind them). MMR only
    reorders: every candidate comes back, so recall returns k hits whenever k candidates pass the
    floors (an earlier anima version dropped hits at Jaccard 0.5 and lost parallel facts).
    """
    items = list(ranked)
    if len(items) <= 1 or lam >= 1.0:
        return sorted(items, key=lambda c: -c.score)
    lam = max(0.0, lam)
    token_sets = {c.memory_id: tokens(c) for c in items}
    hi = max(c.score for c in items)
    lo = min(c.score for c in items)
    span = hi - lo

    def norm(s: float) -> float:
        return 1.0 if span == 0 else (s - lo) / span

    selected: list[Candidate] = []
    remaining = items[:]
    max_sim = {c.memory_id: 0.0 for c in items}
    stop = len(items) if limit is None else min(limit, len(items))
    while remaining and len(selected) < stop:
        best = max(remaining, key=lambda c: (lam * norm(c.score) - (1 - lam) * max_sim[c.memory_id], c.score))
        selected.append(best)
        remaining.remove(best)
        chosen = token_sets[best.memory_id]
        for c in remaining:
            sim = jaccard(token_sets[c.memory_id], chosen)
            if sim > max_sim[c.memory_id]:
                max_sim[c.memory_id] = sim
    remaining.sort(key=lambda c: -c.score)
    return selected + remaining


def merge_in_order(ordered: Sequence[T], others: Sequence[T], score: Callable[[T], float]) -> list[T]:
    """`others` (highest score first) merged into `ordered`, whose own order is kept.

    Recall's episode hits leave its rules (MMR, supersession, the time window) in an order that is not
    their score order; sorting them together with the consolidated facts by score undid those rules,
    and did so even when no fact came back (the daemon's default: before the first night's
    consolidation zh-dev2 R@1 fell from 72.97 to 67.57 and updates ranked above their stale turn from 11
    to 7 of 12). An episode counts in the merge as high as the best episode the rules put below it (a
    lifted update stands where its stale turn stood), and a fact goes in ahead of the first episode it
    outscores by that measure.
    """
    bar: list[float] = []
    best = -math.inf
    for item in reversed(ordered):
        best = max(best, score(item))
        bar.append(best)
    bar.reverse()
    out: list[T] = []
    i = j = 0
    while i < len(ordered) and j < len(others):
        if score(others[j]) > bar[i]:
            out.append(others[j])
            j += 1
        else:
            out.append(ordered[i])
            i += 1
    return out + list(ordered[i:]) + list(others[j:])


def hub_penalties(levels: Mapping[int, float], weight: float) -> dict[int, float]:
    """What each candidate's cosine loses for being a hub: weight * (its background level - the candidates' mean).

    CSLS (Conneau et al. 2018) subtracts a target's mean similarity to its neighbours from every
    cosine to it. Centred on this query's candidates, the penalties sum to zero: the lane's scale, which
    the vector floor and the lane weights are set against, stays where it was for any embedder, and
    only the order among near-equal cosines moves (a chatty memory drops below a specific one).
    """
    if not levels or weight <= 0:
        return {}
    mean = sum(levels.values()) / len(levels)
    return {memory_id: weight * (level - mean) for memory_id, level in levels.items()}


def is_small_talk(best_cosine: float, background_cosine: float, margin: float) -> bool:
    """The calibrated relevance floor: no memory is closer to the query than generic chat is, less `margin`.

    e5 puts any two Chinese sentences at cosine 0.85-0.92, so no fixed cosine tells "related" from
    "unrelated"; the query's own nearest line of background chat (engine/memory/data/smalltalk.txt)
    is its null level. "今天天气不错" is nearer to "今天天气真好" than to any memory: nothing is injected.
    """
    return best_cosine < background_cosine - margin


def window_first(ranked: Sequence[Candidate], start: float, end: float) -> list[Candidate]:
    """A question that names a time ("三月份", "春节") is answered from that time: its hits first, in order.

    Restrict with a fallback, not a filter: the rest follow, so a window read wrongly costs order,
    never the answer; and no constant weighs "in the window" against relevance.
    """
    inside = [c for c in ranked if start <= c.ts < end]
    return inside + [c for c in ranked if not start <= c.ts < end]
