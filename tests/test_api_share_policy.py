"""The sharing policy (engine.share): relevance, mood and sociability, recency, and not offering too often."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.share import DEFAULT_POLICY, Candidate, decide, recency, relevance, willingness

NOW = 1_780_000_000.0
H = 3600.0
GARDEN = Candidate(1, NOW - 2 * H, "下午去植物园看了睡莲，还拍了一只橘猫")
MUSIC = Candidate(2, NOW - 2 * H, "傍晚在阳台练尤克里里，弹错了好多")
GOOD = {"sociability": 0.6, "valence": 0.3, "arousal": 0.2}


def test_sharing_off_offers_nothing() -> None:
    assert decide([GARDEN], "植物园", now=NOW, last_offer_at=None, enabled=False, **GOOD).reason == "sharing_off"


def test_nothing_recent_is_nothing_untold() -> None:
    old = Candidate(3, NOW - 30 * 24 * H, "上个月去海边")
    assert decide([], None, now=NOW, last_offer_at=None, **GOOD).reason == "nothing_untold"
    assert decide([old], "海边", now=NOW, last_offer_at=None, **GOOD).reason == "nothing_untold"


def test_relevance_to_the_query_picks_the_event() -> None:
    assert decide([GARDEN, MUSIC], "你去植物园看睡莲了吗", now=NOW, last_offer_at=None, **GOOD).life_event_id == 1
    assert decide([GARDEN, MUSIC], "尤克里里练得怎么样", now=NOW, last_offer_at=None, **GOOD).life_event_id == 2


def test_without_a_query_only_a_fresh_event_is_offered_in_a_good_mood() -> None:
    fresh = Candidate(4, NOW - 600, "刚刚烤好了一盘饼干")
    stale = Candidate(5, NOW - 40 * H, "前天晚上看了一部电影")
    assert decide([fresh, stale], None, now=NOW, last_offer_at=None, **GOOD).life_event_id == 4
    assert decide([stale], None, now=NOW, last_offer_at=None, **GOOD).reason == "nothing_fits"


def test_a_low_flat_mood_keeps_her_to_herself() -> None:
    low = {"sociability": 0.3, "valence": -0.8, "arousal": -0.6}
    assert decide([GARDEN], "植物园睡莲", now=NOW, last_offer_at=None, **low).reason == "not_in_the_mood"


def test_not_offered_too_often() -> None:
    policy = DEFAULT_POLICY
    assert decide([GARDEN], "植物园", now=NOW, last_offer_at=NOW - 60, **GOOD).reason == "cooldown"
    just_offered = Candidate(1, GARDEN.ts, GARDEN.text, offers=1, last_offered_at=NOW - policy.min_gap_s - 1)
    assert decide([just_offered], "植物园", now=NOW, last_offer_at=NOW - policy.min_gap_s - 1, **GOOD).reason == "nothing_fits"
    worn_out = Candidate(1, GARDEN.ts, GARDEN.text, offers=policy.max_offers_per_event, last_offered_at=NOW - 10 * H)
    assert decide([worn_out], "植物园", now=NOW, last_offer_at=None, **GOOD).reason == "nothing_fits"


def test_parts_of_the_score() -> None:
    assert relevance(None, GARDEN.text) == 0.0
    assert relevance("植物园", GARDEN.text) > relevance("尤克里里", GARDEN.text)
    assert recency(0, 12) == 1.0 and abs(recency(12 * H, 12) - 0.5) < 1e-9
    assert willingness(0.8, 0.5, 0.3) > willingness(0.2, -0.5, -0.3)


candidates = st.lists(
    st.builds(Candidate, st.integers(1, 50), st.floats(NOW - 100 * H, NOW + H),
              st.sampled_from([GARDEN.text, MUSIC.text, "早上喝了咖啡", "看了一集纪录片"]),
              st.integers(0, 3), st.one_of(st.none(), st.floats(NOW - 20 * H, NOW))),
    max_size=8, unique_by=lambda c: c.life_event_id)
moods = st.floats(-1, 1)


@given(candidates, st.one_of(st.none(), st.sampled_from(["植物园", "尤克里里", "咖啡"])), st.floats(0, 1), moods, moods,
       st.one_of(st.none(), st.floats(NOW - 10 * H, NOW)))
def test_at_most_one_eligible_event_is_offered(pool: list[Candidate], query: str | None, soc: float, v: float,
                                               a: float, last: float | None) -> None:
    decision = decide(pool, query, sociability=soc, valence=v, arousal=a, now=NOW, last_offer_at=last)
    policy = DEFAULT_POLICY
    if decision.life_event_id is None:
        assert decision.reason != "offered"
        return
    chosen = next(c for c in pool if c.life_event_id == decision.life_event_id)
    assert decision.reason == "offered" and decision.score >= policy.threshold
    assert chosen.ts <= NOW and chosen.offers < policy.max_offers_per_event
    assert last is None or NOW - last >= policy.min_gap_s


@given(candidates, st.floats(0, 1), moods, moods, st.floats(0, 0.5))
def test_a_better_mood_never_withdraws_an_offer(pool: list[Candidate], soc: float, v: float, a: float,
                                                lift: float) -> None:
    low = decide(pool, "植物园", sociability=soc, valence=v, arousal=a, now=NOW, last_offer_at=None)
    high = decide(pool, "植物园", sociability=soc, valence=min(1.0, v + lift), arousal=a, now=NOW, last_offer_at=None)
    if low.reason == "offered":
        assert high.reason == "offered"
