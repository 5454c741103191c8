"""Ranking equations (after OpenClaw memory-core): keyword coverage, fusion, decay, importance, MMR, floors, strength."""

import math

from hypothesis import given
from hypothesis import strategies as st

from engine.memory import ranking
from engine.memory.ranking import Candidate, RankParams

DAY = 86400.0


def cand(i, v=0.0, t=0.0, ts=0.0, imp=5.0, text="", strength=1.0):
    return Candidate(memory_id=i, vector_score=v, text_score=t, ts=ts, importance=imp, text=text, strength=strength)


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(min_value=0, max_value=20), max_size=8),
       st.sets(st.text(min_size=1, max_size=3), max_size=8))
def test_keyword_coverage_is_a_share_of_the_query_weight(weights, doc):
    c = ranking.keyword_coverage(weights, doc)
    assert 0.0 <= c <= 1.0 + 1e-9
    # Adding every query term to the memory can only raise it, to 1 when the query has any weight.
    full = ranking.keyword_coverage(weights, doc | set(weights))
    assert full >= c - 1e-9
    assert math.isclose(full, 1.0) or sum(weights.values()) == 0


def test_keyword_coverage_weighs_rare_words_over_common_ones():
    weights = {"高铁": 5.6, "参加": 1.1}
    assert ranking.keyword_coverage(weights, {"高铁"}) > 0.8
    assert ranking.keyword_coverage(weights, {"参加"}) < 0.2


def test_fusion_is_weighted_mean():
    assert math.isclose(ranking.fuse(1.0, 0.0, 0.7, 0.3), 0.7)
    assert math.isclose(ranking.fuse(0.5, 0.5, 0.7, 0.3), 0.5)


@given(st.floats(min_value=-1000, max_value=0))
def test_future_timestamps_do_not_decay(age):
    assert ranking.decay_multiplier(age, 30) == 1.0


def test_half_life():
    assert math.isclose(ranking.decay_multiplier(30, 30), 0.5)


@given(st.floats(min_value=-5, max_value=20))
def test_importance_multiplier_is_clamped(importance):
    m = ranking.importance_multiplier(importance)
    assert 0.8 - 1e-9 <= m <= 1.25 + 1e-9


def test_six_month_old_relevant_memory_passes_min_score():
    """Upstream applies min_score after decay: 0.8 * 2**-6 = 0.0125 would be dropped. anima keeps it."""
    now = 200 * DAY
    old = cand(1, v=0.8, t=0.8, ts=now - 180 * DAY)
    ranked = ranking.score_candidates([old], RankParams(), now)
    kept = ranking.apply_min_score(ranked, 0.35, set(), 0.3)
    assert [c.memory_id for c in kept] == [1]
    assert ranked[0].score >= 0.8 * RankParams().decay_floor * 0.9


def test_keyword_fallback_keeps_keyword_hits_when_nothing_passes():
    ranked = ranking.score_candidates([cand(1, v=0.0, t=0.95), cand(2, v=0.2, t=0.0)], RankParams(), 0.0)
    kept = ranking.apply_min_score(ranked, 0.35, {1}, RankParams().text_weight)
    assert [c.memory_id for c in kept] == [1]


def test_min_score_without_keyword_hits_returns_nothing():
    ranked = ranking.score_candidates([cand(2, v=0.2)], RankParams(), 0.0)
    assert ranking.apply_min_score(ranked, 0.35, set(), 0.3) == []


def test_mmr_demotes_a_near_duplicate_and_keeps_it():
    from engine.memory.tokens import jaccard_tokens

    items = [cand(1, text="又买了糖炒栗子，这次是好的"), cand(2, text="糖炒栗子这次买的都是好的"),
             cand(3, text="加班到九点，路上买了糖炒栗子，一半都是坏的"), cand(4, text="下午去图书馆还书")]
    items = [ranking.replace(c, score=s) for c, s in zip(items, (0.9, 0.89, 0.85, 0.5), strict=True)]
    out = ranking.mmr(items, 0.7, lambda c: jaccard_tokens(c.text))
    assert [c.memory_id for c in out] == [1, 3, 2, 4]


def test_mmr_keeps_parallel_facts_that_share_a_template():
    """MemDaily: "…的时间是…" and "…的持续时间是两天" are two facts; the old Jaccard 0.5 rule deleted one."""
    from engine.memory.tokens import jaccard_tokens

    items = [cand(1, text="公司年会的时间是十二月二十号"), cand(2, text="公司年会的持续时间是两天"),
             cand(3, text="年会的地点是公司食堂")]
    items = [ranking.replace(c, score=s) for c, s in zip(items, (0.9, 0.85, 0.8), strict=True)]
    out = ranking.mmr(items, 0.7, lambda c: jaccard_tokens(c.text), limit=2)
    assert sorted(c.memory_id for c in out) == [1, 2, 3]


@given(st.lists(st.tuples(st.floats(min_value=0, max_value=1), st.sampled_from(["栗子", "糖炒栗子", "买栗子了", "书"])),
                max_size=12), st.floats(min_value=0, max_value=1), st.integers(min_value=1, max_value=12))
def test_mmr_never_returns_fewer_than_it_was_given(rows, lam, k):
    from engine.memory.tokens import jaccard_tokens

    items = [ranking.replace(cand(i, text=t), score=s) for i, (s, t) in enumerate(rows)]
    out = ranking.mmr(items, lam, lambda c: jaccard_tokens(c.text), limit=k)
    assert sorted(c.memory_id for c in out) == list(range(len(rows)))


def test_only_the_same_statement_is_demoted_one_place_and_nothing_is_deleted():
    items = [cand(1, text="好的"), cand(2, text="好的"), cand(3, text="好的呀"), cand(4, text="行")]
    out = ranking.demote_duplicates(items, lambda c: c.text)
    assert [c.memory_id for c in out] == [1, 3, 2, 4]
    assert [c.memory_id for c in ranking.demote_duplicates(items[:2], lambda c: c.text)] == [1, 2]


def test_mmr_lambda_one_is_relevance_order():
    items = [ranking.replace(cand(i, text=str(i)), score=s) for i, s in ((1, 0.2), (2, 0.9))]
    assert [c.memory_id for c in ranking.mmr(items, 1.0, lambda c: frozenset(c.text))] == [2, 1]


def test_small_talk_is_a_query_no_memory_beats_generic_chat_on():
    assert ranking.is_small_talk(0.88, 0.93, 0.015)
    assert not ranking.is_small_talk(0.92, 0.93, 0.015)
    assert not ranking.is_small_talk(0.95, 0.93, 0.015)


@given(st.floats(min_value=0, max_value=3650), st.floats(min_value=0.1, max_value=10),
       st.floats(min_value=0.0, max_value=10))
def test_stronger_memories_fade_slower(age, strength, extra):
    """MemoryBank's code got this sign wrong; here retention never decreases with strength."""
    weak = ranking.retention(age, 30, strength)
    strong = ranking.retention(age, 30, strength + extra)
    assert strong >= weak - 1e-12


@given(st.floats(min_value=0, max_value=1e5), st.floats(min_value=0.1, max_value=10))
def test_unused_memories_fade_but_never_vanish(age, strength):
    w = ranking.recency_weight(age, 30, strength, 0.8)
    assert 0.8 <= w <= 1.0
    assert ranking.recency_weight(age + 1, 30, strength, 0.8) <= w + 1e-12


@given(st.floats(min_value=0.1, max_value=9), st.floats(min_value=0, max_value=365))
def test_recall_strengthens_more_after_a_longer_gap(strength, gap):
    s1 = ranking.strength_after_recall(strength, gap)
    s2 = ranking.strength_after_recall(strength, gap + 30)
    assert s1 > strength or s1 == 10.0
    assert s2 >= s1 - 1e-12


def test_the_same_normalised_text_is_kept_once():
    from engine.memory.tokens import same_text_key

    items = [cand(1, text="我现在住哪？"), cand(2, text="我现在住哪"), cand(3, text="我现在住哪个区")]
    out = ranking.collapse_same_text(items, lambda c: same_text_key(c.text))
    assert [c.memory_id for c in out] == [1, 3]


def test_rrf_puts_a_memory_first_in_both_lanes_at_one_and_needs_no_score_scale():
    assert math.isclose(ranking.rrf_relevance((1, 1), (0.7, 0.3), 60.0), 1.0)
    # Agreement of the lanes counts more than being first in one: rank 2 in both beats rank 1 in one lane alone.
    assert ranking.rrf_relevance((2, 2), (1.0, 1.0), 60.0) > ranking.rrf_relevance((1, 0), (1.0, 1.0), 60.0)
    assert ranking.rrf_relevance((0, 0), (1.0, 1.0), 60.0) == 0.0
    assert ranking.lane_ranks([0.9, 0.0, 0.5, 0.9]) == [1, 0, 3, 1]


def test_rrf_fusion_orders_by_lane_ranks_not_by_raw_scores():
    params = RankParams(fusion="rrf", vector_weight=1.0, text_weight=1.0, use_decay=False, use_importance=False)
    # b is second in both lanes, a first in the vector lane and absent from the keyword lane, c the reverse.
    cands = [cand(1, v=0.9, t=0.0), cand(2, v=0.5, t=0.2), cand(3, v=0.0, t=0.9)]
    ranked = ranking.score_candidates(cands, params, now=0.0)
    assert [c.memory_id for c in ranked][0] == 2


@given(st.dictionaries(st.integers(0, 50), st.floats(min_value=0.5, max_value=1.0), min_size=1, max_size=12),
       st.floats(min_value=0.01, max_value=1.0))
def test_hub_penalties_sum_to_zero_and_grow_with_nearness_to_chat(levels, weight):
    """Centred on the query's candidates: the lane keeps its scale, only the order among near-equals moves."""
    penalties = ranking.hub_penalties(levels, weight)
    assert set(penalties) == set(levels)
    assert abs(sum(penalties.values())) < 1e-9 * len(levels) + 1e-12
    by_level = sorted(levels, key=lambda i: levels[i])
    assert all(penalties[a] <= penalties[b] + 1e-12 for a, b in zip(by_level, by_level[1:], strict=False))


def test_hub_penalties_off_or_empty_change_nothing():
    assert ranking.hub_penalties({1: 0.95, 2: 0.85}, 0.0) == {}
    assert ranking.hub_penalties({}, 0.25) == {}


def test_a_chatty_memory_loses_a_near_tie_to_a_specific_one():
    """Equal cosines: the memory that sits nearer to generic chat ranks second once the penalty applies."""
    penalties = ranking.hub_penalties({1: 0.93, 2: 0.88}, 0.25)
    scores = {i: 0.885 - penalties[i] for i in (1, 2)}
    assert scores[2] > scores[1]
    assert math.isclose(penalties[1] - penalties[2], 0.25 * 0.05)


@given(st.lists(st.floats(min_value=0, max_value=1), max_size=8), st.lists(st.floats(min_value=0, max_value=1), max_size=8))
def test_merge_in_order_keeps_the_episodes_order_and_the_facts_score_order(episode_scores, fact_scores):
    episodes = [("e", i, s) for i, s in enumerate(episode_scores)]
    facts = sorted((("f", i, s) for i, s in enumerate(fact_scores)), key=lambda x: -x[2])
    merged = ranking.merge_in_order(episodes, facts, lambda x: x[2])
    assert sorted(merged) == sorted(episodes + facts)
    assert [x for x in merged if x[0] == "e"] == episodes
    assert [x for x in merged if x[0] == "f"] == facts


def test_merge_in_order_puts_a_lifted_update_where_its_stale_turn_stood():
    """The rules lifted the newer statement (0.5) above the stale one (0.6): a 0.55 fact goes after both."""
    episodes = [("newer", 0.5), ("stale", 0.6), ("other", 0.2)]
    merged = ranking.merge_in_order(episodes, [("fact", 0.55)], lambda x: x[1])
    assert [name for name, _ in merged] == ["newer", "stale", "fact", "other"]
    assert [name for name, _ in ranking.merge_in_order(episodes, [], lambda x: x[1])] == ["newer", "stale", "other"]
