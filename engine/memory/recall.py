"""Hybrid recall: vector and keyword lanes, the source gate, the ranking rules, one hit per turn, the context block."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from engine.control import Switches
from engine.errors import InputError
from engine.memory import lexicon, ranking, supersede, timeq, vector_index
from engine.memory.background import background_cosine, background_levels, background_vectors
from engine.memory.context import build_block
from engine.memory.embed import Embedder, refuse_other_model, vec_blob
from engine.memory.lineage import LineageMatcher
from engine.memory.ranking import Candidate, RankParams
from engine.memory.tokens import (
    doc_terms,
    duplicate_key,
    fts_query,
    general_idf,
    jaccard_tokens,
    query_term_weights,
    same_text_key,
    word_tokens,
)
from engine.settings import LifeSettings, MemorySettings
from engine.store import memory as memory_store
from engine.store import recall as store
from engine.store.caches import FileCache, file_cache
from engine.store.connect import database_file

FAR_FUTURE = 1e13
WINDOW_CAP = 200  # memories of one time window scored at most, the latest first (~1 ms of vector reads at 100k)
COMMON_TERM_MIN_ROWS = 5000
COMMON_TERM_FRACTION = 0.02
MAX_QUERY_LINES = 8


@dataclass(frozen=True)
class Lanes:
    cosines: dict[int, float]  # memory id -> cosine to the query (blended per line for a multi-line query)
    keyword_ids: set[int]  # ids the FTS5 lane found
    query_vec: np.ndarray | None
    line_vecs: np.ndarray | None  # one vector per line of a multi-line query, else None
    line_best: np.ndarray | None  # per line, its best cosine over the candidates (multi-line queries)
    vectors: dict[int, np.ndarray] = field(default_factory=dict)  # candidate vectors the lanes read already


@dataclass(frozen=True)
class RecallHit:
    memory_id: int
    turn_id: str | None
    message_id: int | None
    role: str | None
    ts: str
    text: str
    score: float
    source: str
    ts_unix: float = 0.0
    relevance: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id, "turn_id": self.turn_id, "message_id": self.message_id, "role": self.role,
            "ts": self.ts, "text": self.text, "score": round(self.score, 6), "source": self.source,
        }


@dataclass(frozen=True)
class RecallResult:
    query: str
    mode: str
    hits: list[RecallHit] = field(default_factory=list)
    context: str = ""
    context_memory_ids: list[int] = field(default_factory=list)
    fact_ids: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "hits": [h.to_json() for h in self.hits],
                "context": self.context}


def params_from_settings(s: MemorySettings) -> RankParams:
    return RankParams(
        vector_weight=s.vector_weight, text_weight=s.text_weight, half_life_days=s.decay_half_life_days,
        decay_floor=s.decay_floor, min_score=s.min_score, mmr_lambda=s.mmr_lambda,
        dialogue_text_scale=s.dialogue_text_scale, hubness_weight=s.hubness_weight,
    )


def check_query(query: Any, max_chars: int) -> str:
    if not isinstance(query, str):
        raise InputError(f"recall query must be text, got {type(query).__name__}")
    text = query.strip()
    if not text:
        raise InputError("recall query is empty; give the words to search for")
    if len(text) > max_chars:
        raise InputError(
            f"recall query is {len(text)} characters, more than the limit of {max_chars} "
            "([memory] max_query_chars); send the last turns, not the whole history"
        )
    return text


def iso_of(ts: float, ts_iso: str | None) -> str:
    return ts_iso or datetime.fromtimestamp(ts, UTC).isoformat()


def vector_score(cosine: float, floor: float) -> float:
    """Cosine rescaled so that `floor` (the model's unrelated-text level) maps to 0 and 1 stays 1.

    e5 puts almost any two Chinese sentences above cosine 0.7, so the raw cosine makes the 0.7
    weight a constant offset and min_score meaningless; rescaling restores both.
    """
    if floor <= 0:
        return cosine
    return max(0.0, (cosine - floor) / (1.0 - floor))


def candidate_vectors(conn: Any, ids: Sequence[int]) -> dict[int, np.ndarray]:
    return {row["id"]: np.frombuffer(row["embedding"], dtype=np.float32) for row in memory_store.vectors_of(conn, ids)}


def add_window_lane(conn: Any, lanes: Lanes, window: timeq.TimeWindow, n: int) -> None:
    """The time lane: the memories of the window the question names, the n nearest of them by cosine.

    A question about "三月份" is answered by a turn of March that may share no word and only a weak
    cosine with it, below the two lanes' cut; so the window's own memories become candidates.
    """
    assert lanes.query_vec is not None
    ids = store.ids_in_window(conn, window.start, window.end, WINDOW_CAP)
    fresh = [i for i in ids if i not in lanes.cosines]
    scored = []
    for memory_id, vec in candidate_vectors(conn, fresh).items():
        lanes.vectors[memory_id] = vec
        cosine = float(vec @ lanes.query_vec)
        if lanes.line_vecs is not None:
            cosine = 0.5 * (cosine + float((lanes.line_vecs @ vec).max()))
        scored.append((cosine, memory_id))
    for cosine, memory_id in sorted(scored, reverse=True)[:n]:
        lanes.cosines[memory_id] = cosine


def merge_extra_hits(hits: Sequence[Any], extra: Sequence[Any], params: RankParams, now: float,
                     window: timeq.TimeWindow | None) -> list[Any]:
    """Episode hits and other sources' hits (consolidated facts) in one order, on one scale.

    A fact's score is its bare rescaled cosine; an episode's has passed the recency weight and the
    time window. Sorted raw, facts jumped over every episode (with the nightly facts on zh-dev2 R@1
    fell from 64.9 to 56.8 and time questions from 8/9 to 3/9): so a fact is weighed for its age
    (from valid_from) like an episode, and a time window puts its own hits first here too. A hit
    without a time (`ts_unix` absent or 0) keeps its score and counts as outside any window. The
    episodes keep the order recall's rules gave them; facts are merged in (ranking.merge_in_order).
    """
    weighed = []
    for h in extra:
        score = h.score
        ts = getattr(h, "ts_unix", 0.0) or 0.0
        if params.use_decay and ts > 0:
            age_days = (now - ts) / ranking.DAY_S
            score *= ranking.recency_weight(age_days, params.half_life_days, 1.0, params.decay_floor)
        weighed.append(replace(h, score=score))
    merged = ranking.merge_in_order(hits, sorted(weighed, key=lambda h: -h.score), lambda h: h.score)
    if window is not None:
        def within(h: Any) -> bool:
            return window.start <= (getattr(h, "ts_unix", 0.0) or 0.0) < window.end
        merged = [h for h in merged if within(h)] + [h for h in merged if not within(h)]
    return merged


def lexicon_expanded(weights: dict[str, float], limit: int) -> dict[str, float]:
    """The query's term weights plus its lexicon expansion (engine/memory/lexicon.py): synonyms, classes, members.

    An expansion term weighs its lexicon weight times the weight of the word it came from, shared
    among the terms of that word, so "乐器" can find "架子鼓" but ten instruments do not outweigh
    one name the question actually says.
    """
    out = dict(weights)
    for word, w in weights.items():
        extra = lexicon.expand([word], limit)
        if not extra:
            continue
        share = w / max(1.0, sum(extra.values()))
        for term, lw in extra.items():
            if term not in out:
                out[term] = lw * share
    return out


def above_background(embedder: Embedder | None, lanes: Lanes, rows: list[Any], margin: float) -> list[Any]:
    """The relevance floor (ranking.is_small_talk): the rows nearer to the query than generic chat, less `margin`.

    A one-line query keeps the rows that beat its nearest background line ("嗯" is no answer to
    "蓝色封面的诗集"); none left means small talk. A multi-line query (the last turns of a dialogue) is
    small talk only when each of its lines is: the turn that carries the topic is often not the last
    one, so its rows are not filtered one by one. A row without a vector yet (the indexer has not
    reached it) cannot be judged and stays.
    """
    assert embedder is not None and lanes.query_vec is not None
    judged = [r for r in rows if r["id"] in lanes.cosines]
    if not judged:
        return rows
    if lanes.line_vecs is None or lanes.line_best is None:
        level = background_cosine(embedder, lanes.query_vec)
        return [r for r in rows if r["id"] not in lanes.cosines
                or not ranking.is_small_talk(lanes.cosines[r["id"]], level, margin)]
    if all(ranking.is_small_talk(float(best), background_cosine(embedder, vec), margin)
           for best, vec in zip(lanes.line_best, lanes.line_vecs, strict=True)):
        return [r for r in rows if r["id"] not in lanes.cosines]
    return rows


def hub_penalties_of(conn: Any, embedder: Embedder | None, lanes: Lanes, rows: list[Any],
                     weight: float) -> dict[int, float]:
    """The hubness penalty of each candidate with a vector (ranking.hub_penalties over background_levels).

    The lanes keep their raw cosines: the small-talk floor is calibrated on them. Only the vector score
    the fusion ranks by is corrected. A row without a vector yet has no penalty.
    """
    ids = [r["id"] for r in rows if r["id"] in lanes.cosines]
    if embedder is None or not ids or weight <= 0:
        return {}
    unread = [i for i in ids if i not in lanes.vectors]
    vecs = {**{i: lanes.vectors[i] for i in ids if i in lanes.vectors},
            **(candidate_vectors(conn, unread) if unread else {})}
    if not vecs:
        return {}
    found = list(vecs)
    levels = background_levels(embedder, np.stack([vecs[i] for i in found]))
    return ranking.hub_penalties(dict(zip(found, levels.tolist(), strict=True)), weight)


def lineage_families(conn: Any, embedder: Embedder, items: Sequence[tuple[int, str]]) -> dict[int, frozenset[str]]:
    """Lineage families (home, job, pet ...) of (memory id, text) pairs, from their stored passage vectors."""
    vecs = candidate_vectors(conn, [i for i, _ in items])
    with_vec = [(i, t) for i, t in items if i in vecs]
    families: dict[int, frozenset[str]] = {i: frozenset() for i, _ in items}
    if with_vec:
        matches = lineage_matcher(embedder).match([t for _, t in with_vec], np.stack([vecs[i] for i, _ in with_vec]))
        for (i, _), m in zip(with_vec, matches, strict=True):
            families[i] = frozenset(f for f in [m.family, *(x.family for x in m.also)] if f != "none")
    return families


def slot_rule(conn: Any, embedder: Embedder, hits: Sequence[Candidate], settings: MemorySettings,
              by_words: bool = True, below: dict[int, frozenset[str]] | None = None
              ) -> Callable[[Candidate, Candidate], bool]:
    """supersede.same_slot over these candidates: lineage families and, with `by_words`, informative words
    (segmented for these few hits only). `below`: hits under the head, by id, with the head's slot words
    among their own; they share a slot by those words only, not by lineage (keying each of them too cost
    2.5 ms of CPU per present question at 100k memories)."""
    families = lineage_families(conn, embedder, [(c.memory_id, c.text) for c in hits])
    words = {c.memory_id: supersede.slot_words(c.text, settings.update_slot_idf) if by_words else frozenset()
             for c in hits}
    for memory_id, held in (below or {}).items():
        if memory_id not in families:
            families[memory_id] = frozenset()
            words[memory_id] = held if by_words else frozenset()

    def same(a: Candidate, b: Candidate) -> bool:
        if a.memory_id not in families or b.memory_id not in families:
            return False  # a hit below the head that supersede.reachable left out: it never moves
        return supersede.same_slot(a.ts, b.ts, families[a.memory_id], families[b.memory_id], words[a.memory_id],
                                   words[b.memory_id], settings.update_session_gap_s)

    return same


def merged_slot_rule(conn: Any, embedder: Embedder, hits: Sequence[Any], settings: MemorySettings,
                     by_words: bool = True) -> Callable[[Any, Any], bool]:
    """The same rule over episode hits and consolidated facts together: a fact's family is its key's
    ("home:徐汇" -> home), its words those of its sentence (not its date prefix)."""
    episodes = [(h.memory_id, h.text) for h in hits if isinstance(h, RecallHit)]
    by_memory = lineage_families(conn, embedder, episodes)
    families: dict[int, frozenset[str]] = {}
    words: dict[int, frozenset[str]] = {}
    for h in hits:
        if isinstance(h, RecallHit):
            families[id(h)] = by_memory[h.memory_id]
            text = h.text
        else:
            key = str(getattr(h, "key", ""))
            families[id(h)] = frozenset({key.split(":", 1)[0]}) if key else frozenset()
            text = h.text.partition("：")[2] or h.text
        words[id(h)] = supersede.slot_words(text, settings.update_slot_idf) if by_words else frozenset()

    def same(a: Any, b: Any) -> bool:
        return supersede.same_slot(a.ts_unix, b.ts_unix, families[id(a)], families[id(b)], words[id(a)],
                                   words[id(b)], settings.update_session_gap_s)

    return same


_MATCHERS: dict[str, LineageMatcher] = {}
_MATCHERS_LOCK = threading.Lock()


def warm(embedder: Embedder) -> None:
    """Load once what the first recall of a process would otherwise pay for in its reply (~1.7 s on this
    CPU): jieba's IDF table, the background chat's vectors and the lineage prototypes."""
    general_idf()
    background_vectors(embedder)
    lineage_matcher(embedder)


def lineage_matcher(embedder: Embedder) -> LineageMatcher:
    """One LineageMatcher (its prototype vectors) per embedder model, built on first use.

    Built under a lock: the daemon warms it in a thread after READY, and a reply arriving meanwhile
    waits for that one build instead of embedding the 42 prototypes again on the DB thread."""
    name = str(getattr(embedder, "name", type(embedder).__name__))
    found = _MATCHERS.get(name)
    if found is not None:
        return found
    with _MATCHERS_LOCK:
        if name not in _MATCHERS:
            _MATCHERS[name] = LineageMatcher(embedder)
        return _MATCHERS[name]


# Chinese interrogative pronouns and adverbs (疑问代词), as the grammars list them (黄伯荣、廖序东《现代汉语》;
# 吕叔湘《现代汉语八百词》), with the colloquial 啥 (= 什么) and 咋 (= 怎么) that the dictionaries give as their
# spoken forms, 多 + adjective asking a degree (多大 多高 多久), and 几 only before a measure word. Not their
# indefinite uses: 这几天, 没什么, 不怎么 ("nothing much"), 哪怕. English wh-words. Question particles (吗 呢 吧)
# are left out: "我好看吗" asks for an opinion, not for a memory.
_INTERROGATIVES = re.compile("(?<![没不])什么|(?<!没)啥|谁|哪(?!怕)|(?<!不)怎么|怎样|咋|多少|多大|多高|多重|多久|多远|多长|为何|何时"
                             "|(?<![这那好])几[岁点号个次天年月回位口名]")
_FIRST_PERSON = ("我", "咱")
_EN_SELF = re.compile(r"\b(what|where|who|when|which|how|why)\b.*\b(i|my|me)\b")


def asks_about_self(query: str) -> bool:
    """Whether a one-line query is a question about the user himself (我 + an interrogative: "我是干什么的").

    Such a question asks for what memory holds by its very form, so it is never small talk, however
    near e5 puts it to a background line ("我是干什么的" is at 0.91 to "你在做什么呢", the floor's
    one false negative on zh-dev2). A multi-line query is dialogue, judged line by line already.
    """
    text = query.strip()
    if "\n" in text:
        return False
    lowered = text.lower()
    if any(p in text for p in _FIRST_PERSON) and _INTERROGATIVES.search(text):
        return True
    return bool(_EN_SELF.search(lowered))


def vector_lane(conn: Any, query_vec: np.ndarray, n: int, index_from: int,
                vectors: dict[int, np.ndarray] | None = None) -> dict[int, float]:
    """The n nearest memories by cosine (exact either way): sqlite-vec's vec0 scan on small histories,
    the in-process numpy matrix (engine/memory/vector_index.py) from `index_from` memories on, which
    also fills `vectors` with the found rows' vectors."""
    if memory_store.max_memory_id(conn) < index_from:
        rows = store.nearest_vectors(conn, vec_blob(query_vec), n)
        return {row["id"]: 1.0 - float(row["distance"]) for row in rows}
    return vector_index.nearest(conn, query_vec, n, vectors)


class TermDocCounts:
    """Document counts of query terms, remembered per database file while the history grows < 5 %.

    Looking a term up in fts5vocab costs ~0.1 ms, and a Chinese query has 20 to 60 terms: 2.6 ms of
    a 45 ms recall at 100k memories. The counts only decide which terms are too common to search,
    so a count that is a few percent stale changes nothing that matters. The counts live in a
    FileCache (engine/store/caches.py), keyed by file identity, with the max id at fill time as the
    fingerprint: the refill rule below judges it (approximate by design, not an equality).
    """

    MAX_TERMS = 50_000
    REFRESH_GROWTH = 1.05

    def __init__(self, cache: FileCache[dict[str, int]] | None = None) -> None:
        self._cache: FileCache[dict[str, int]] = cache if cache is not None else FileCache("term_doc_counts")

    def counts_for(self, conn: Any, max_id: int) -> dict[str, int] | None:
        if database_file(conn) is None:  # an in-memory database: short-lived, not worth remembering
            return None
        held = self._cache.peek(conn, 0)
        filled_at = held[0] if held is not None and isinstance(held[0], int) else 0
        counts = {} if held is None else held[1]
        if held is None or max_id > filled_at * self.REFRESH_GROWTH or max_id < filled_at or len(counts) > self.MAX_TERMS:
            counts = {}
            self._cache.put(conn, 0, max_id, counts)
        return counts

    def clear(self) -> None:
        """Forget the counts of every file (benches measuring cold caches)."""
        self._cache.clear()


_TERM_DOC_COUNTS = TermDocCounts(file_cache("term_doc_counts"))


def common_term_filter(conn: Any, max_id: int, query: str = "") -> Callable[[str], bool] | None:
    """On a big history, a filter dropping terms found in more than COMMON_TERM_FRACTION of memories.

    BM25 over an OR query scores every row holding any term: on 100k memories a term like 喜欢
    touches thousands of rows and costs tens of ms, while its idf (and so its weight) is near zero.
    Small histories keep every term (a fraction of a few hundred rows says little).
    The counts of `query`'s terms not yet cached are read in one statement, before the filter runs.
    """
    if max_id < COMMON_TERM_MIN_ROWS:
        return None
    store.open_term_vocabulary(conn)
    limit = COMMON_TERM_FRACTION * max_id
    cache = _TERM_DOC_COUNTS.counts_for(conn, max_id)
    known: dict[str, int] = {} if cache is None else cache
    if query:
        asked: dict[str, None] = {}

        def note(term: str) -> bool:
            asked[term] = None
            return True

        fts_query(query, keep=note)  # collects the terms the real call will ask about
        unknown = [t for t in asked if t not in known]
        if unknown:
            counts = store.terms_doc_counts(conn, unknown)
            known.update({t: counts.get(t, 0) for t in unknown})

    def doc_count(term: str) -> int:
        if term in known:
            return known[term]
        count = store.term_doc_count(conn, term)
        known[term] = count
        return count

    def keep(term: str) -> bool:
        return doc_count(term) <= limit

    return keep


def query_lines(text: str) -> list[str]:
    """The lines recall also embeds one by one: the last MAX_QUERY_LINES of a multi-line query, else none."""
    lines = [line for line in text.splitlines() if line.strip()][-MAX_QUERY_LINES:]
    return lines if len(lines) >= 2 else []


def _query_vectors(embedder: Embedder, texts: list[str], known: Mapping[str, np.ndarray]) -> np.ndarray:
    """The query vectors of `texts`, one row each: those in `known` as given, the others embedded in one call."""
    missing = [text for text in texts if text not in known]
    fresh = dict(zip(missing, embedder.embed_queries(missing), strict=True)) if missing else {}
    return np.stack([known[text] if text in known else fresh[text] for text in texts]).astype(np.float32)


def lane_candidates(conn: Any, embedder: Embedder | None, query: str, n: int, hybrid: bool,
                    query_vecs: Mapping[str, np.ndarray] | None, index_from: int = 1 << 62) -> Lanes:
    """The candidates of the two lanes, n each: cosine by id (vector lane, plus keyword-only rows rescored)
    and the ids the keyword lane found. `query_vecs`: vectors of the query and its lines the caller
    embedded already (the API, off the DB thread); a text not in it is embedded here."""
    known = query_vecs or {}
    cosines: dict[int, float] = {}
    keyword_ids: set[int] = set()
    line_vecs = None
    line_best = None
    vectors: dict[int, np.ndarray] = {}
    max_id = memory_store.max_memory_id(conn)
    query_vec = known.get(query)
    if hybrid and embedder is not None and query_vec is None:
        # Before the keyword lane, not beside it: the query embeds on every core, and SQLite running
        # at the same time takes a core from it (bench at 100k: p95 52 ms in turn, 56-59 side by side).
        query_vec = embedder.embed_queries([query])[0]
    match = fts_query(query, keep=common_term_filter(conn, max_id, query))
    if match:
        keyword_ids = store.keyword_search(conn, match, n)
    if hybrid and embedder is not None:
        assert query_vec is not None
        cosines.update(vector_lane(conn, query_vec, n, index_from, vectors))
        lines = query_lines(query)
        line_vecs = _query_vectors(embedder, lines, known) if lines else None
        missing = [i for i in keyword_ids if i not in cosines]
        rescored = list(cosines) + missing if line_vecs is not None else missing
        if rescored:
            # Keyword-only candidates get their true cosine (upstream leaves 0): cheap, k*4 rows at most.
            for memory_id, vec in candidate_vectors(conn, rescored).items():
                vectors[memory_id] = vec
                cosine = float(vec @ query_vec)
                if line_vecs is not None:
                    # A multi-line query (the last turns of a dialogue): half the whole, half its best line.
                    # The memory a dialogue needs usually matches one turn, not the average of all of them.
                    per_line = line_vecs @ vec
                    line_best = per_line if line_best is None else np.maximum(line_best, per_line)
                    cosine = 0.5 * (cosine + float(per_line.max()))
                cosines[memory_id] = cosine
    return Lanes(cosines, keyword_ids, query_vec, line_vecs, line_best, vectors)


def recall(conn: Any, embedder: Embedder | None, query: str, *, settings: MemorySettings, switches: Switches,
           now: float, k: int | None = None, budget: int | None = None, as_of: float | None = None,
           extra_sources: Sequence[Callable[..., list[Any]]] = (),
           query_vecs: Mapping[str, np.ndarray] | None = None, params: RankParams | None = None,
           tz: str = LifeSettings.tz) -> RecallResult:
    """Recall memories for `query` at time `now`; see the module docstring and ranking.py for the rules.

    `tz` is her zone, in which a time the question names ("三月份", "春节") is read, relative to `now`.
    Reading never writes: a recall leaves the database as it found it, so inspection (`anima recall`,
    `--batch`, the benches) and the order of queries cannot change what is found next. A memory is
    strengthened only when a reply used it (engine/memory/usage.py).
    """
    text = check_query(query, settings.max_query_chars)
    k = settings.k if k is None else k
    if not 1 <= k <= 50:
        raise InputError(f"k must be from 1 to 50, got {k}")
    budget = settings.context_budget_chars if budget is None else budget
    if not switches.memory_search:
        return RecallResult(query=text, mode="off")
    hybrid = switches.memory_hybrid and embedder is not None
    if embedder is not None:
        refuse_other_model(conn, embedder)
    params = params or params_from_settings(settings)
    limit_ts = FAR_FUTURE if as_of is None else as_of
    n = k * settings.candidate_multiplier
    lanes = lane_candidates(conn, embedder, text, n, hybrid, query_vecs, settings.ram_index_from)
    query_vec = lanes.query_vec
    reference = now if as_of is None else min(now, as_of)
    window = timeq.time_window(text, reference, tz) if params.use_time else None
    if window is not None and hybrid:
        add_window_lane(conn, lanes, window, n)
    ids = set(lanes.cosines) | lanes.keyword_ids
    rows = store.gated_rows(conn, sorted(ids), limit_ts)
    by_id = {r["id"]: r for r in rows}
    mode = "hybrid" if hybrid else "keyword"
    if hybrid and params.use_small_talk and rows and not (params.use_self_question and asks_about_self(text)):
        rows = above_background(embedder, lanes, rows, settings.relevance_margin)
        if not rows:
            # Nothing she remembers is nearer to this than generic chat: an empty context is the answer.
            return RecallResult(query=text, mode=mode + "+small_talk")
    penalties = hub_penalties_of(conn, embedder, lanes, rows, params.hubness_weight) \
        if hybrid and params.use_hubness else {}
    weights = query_term_weights(text, settings.keyword_idf_floor)
    # The tokens ingest stored are doc_terms' set (words + bigrams): reading them costs 0.7 ms for 48
    # candidates, segmenting the texts again 5.5 ms.
    stored = {row["id"]: frozenset(row["tokens"].split()) for row in
              store.stored_tokens(conn, [r["id"] for r in rows])}
    if params.use_lexicon and settings.lexicon_terms > 0:
        weights = lexicon_expanded(weights, settings.lexicon_terms)
    cands = [
        Candidate(
            memory_id=r["id"], vector_score=vector_score(
                lanes.cosines.get(r["id"], 0.0) - penalties.get(r["id"], 0.0), settings.vector_floor)
            if hybrid else 0.0,
            text_score=ranking.keyword_coverage(weights, stored.get(r["id"]) or doc_terms(r["raw"])), ts=r["ts"],
            importance=r["importance"], strength=r["accessibility"],
            last_recalled_at=r["last_recalled_at"], text=r["raw"], topic=r["turn_id"] or f"life{r['id']}",
        )
        for r in rows
    ]
    if not hybrid:
        # Keyword lane only: the text score is the whole relevance.
        params = replace(params, vector_weight=0.0, text_weight=1.0)
    elif lanes.line_vecs is not None:
        params = replace(params, text_weight=params.text_weight * params.dialogue_text_scale)
    ranked = ranking.score_candidates(cands, params, now if as_of is None else min(now, as_of))
    kept = ranking.apply_min_score(ranked, params.min_score, lanes.keyword_ids, params.text_weight)
    if kept and not any(c.relevance >= params.min_score for c in kept):
        mode += "+keyword_fallback"
    # One hit per turn: both sides come back through the re-read anyway.
    best_of_turn: dict[str, Candidate] = {}
    for c in kept:
        if c.topic not in best_of_turn:
            best_of_turn[c.topic] = c
    unique = sorted(best_of_turn.values(), key=lambda c: -c.score)
    if params.use_mmr:
        unique = ranking.mmr(unique, params.mmr_lambda, lambda c: jaccard_tokens(c.text), limit=k)
        unique = ranking.collapse_same_text(unique, lambda c: same_text_key(c.text))
        unique = ranking.demote_duplicates(unique, lambda c: duplicate_key(c.text))
    present = (params.use_newer and hybrid and settings.update_depth > 0
               and supersede.asks_about_present(text, asks_about_self(text), window is not None,
                                                params.use_present_default))
    if present and unique:
        assert embedder is not None
        reach = len(unique) if params.use_newer_pool else settings.update_depth
        # Below the head, only a hit holding one of the head's slot words can share a slot (by that word).
        head = unique[:settings.update_depth]
        head_words = frozenset().union(*(supersede.slot_words(c.text, settings.update_slot_idf) for c in head))
        pool = supersede.reachable(unique, settings.update_min_ratio, settings.update_depth, reach, ts=lambda c: c.ts,
                                   shares=lambda c: bool(head_words & (stored.get(c.memory_id) or doc_terms(c.text))))
        # head_words passed the IDF and digit tests already: intersecting with the bare words gives the shared slot words.
        below = {c.memory_id: head_words & frozenset(word_tokens(c.text)) for c in pool[len(head):]}
        unique = supersede.supersede(unique, slot_rule(conn, embedder, head, settings, params.use_slot_words, below),
                                     settings.update_min_ratio, settings.update_depth, ts=lambda c: c.ts, reach=reach)
    if window is not None:
        unique = ranking.window_first(unique, window.start, window.end)
    chosen = unique[:k]
    hits = [
        RecallHit(
            memory_id=c.memory_id, turn_id=by_id[c.memory_id]["turn_id"], message_id=by_id[c.memory_id]["message_id"],
            role=by_id[c.memory_id]["role"], ts=iso_of(c.ts, by_id[c.memory_id]["ts_iso"]), text=c.text,
            score=c.score, source=by_id[c.memory_id]["source"], ts_unix=c.ts, relevance=c.relevance,
        )
        for c in chosen
    ]
    if switches.memory_facts and extra_sources:
        extra = [h for source in extra_sources for h in source(conn, query_vec, text, k=k, now=now, as_of=as_of) or []]
        hits = merge_extra_hits(hits, extra, params, now if as_of is None else min(now, as_of), window)
        if present and extra:
            # Facts and turns agree: a fact from the stale turn must not jump back above the update.
            assert embedder is not None
            hits = supersede.supersede(hits, merged_slot_rule(conn, embedder, hits[:settings.update_depth], settings,
                                                              params.use_slot_words),
                                       settings.update_min_ratio, settings.update_depth, ts=lambda h: h.ts_unix)
        hits = hits[:k]
    block, used, fact_ids = build_block(conn, hits, budget, switches.memory_reread, limit_ts, tz)
    return RecallResult(query=text, mode=mode, hits=hits, context=block, context_memory_ids=used, fact_ids=fact_ids)

