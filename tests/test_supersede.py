"""Supersession (engine/memory/supersede.py): the newer statement of a slot wins a question about the present."""

import json
from dataclasses import replace
from datetime import datetime

import pytest

from engine.memory import supersede
from engine.memory.importer import import_history
from engine.memory.ranking import Candidate
from engine.memory.recall import params_from_settings, recall
from tests.memory_helpers import ON, SETTINGS, embedder, fresh_db

DAY = 86400.0


def hit(i: int, ts: float, relevance: float) -> Candidate:
    return Candidate(memory_id=i, vector_score=relevance, text_score=0.0, ts=ts, relevance=relevance, score=relevance)


def ids(items):
    return [c.memory_id for c in items]


def lift(items, same, ratio=0.8, depth=10):
    return ids(supersede.supersede(items, same, ratio, depth, ts=lambda c: c.ts))


def test_the_newer_statement_is_lifted_just_above_the_older_one():
    old, other, new = hit(1, 0, 0.70), hit(2, 5 * DAY, 0.69), hit(3, 40 * DAY, 0.65)
    out = lift([old, other, new], lambda a, b: {a.memory_id, b.memory_id} == {1, 3})
    assert out == [3, 1, 2]  # only the newer one moved; the stale one stays right behind it


def test_nothing_moves_without_a_shared_slot_or_below_the_relevance_share_or_past_the_depth():
    old, new = hit(1, 0, 0.70), hit(2, 40 * DAY, 0.65)
    assert lift([old, new], lambda a, b: False) == [1, 2]
    assert lift([old, new], lambda a, b: True, ratio=0.95) == [1, 2]  # 0.65 < 0.95 * 0.70
    assert lift([old, hit(3, DAY, 0.69), new], lambda a, b: True, depth=2) == [3, 1, 2]


def test_the_newer_statement_may_come_from_below_the_head_within_reach():
    """Issue 27: the update often sits far below the stale statement (36th on zh-dev2), still in the pool."""
    old, mid, far = hit(1, 0, 0.70), hit(2, 5 * DAY, 0.69), hit(9, 40 * DAY, 0.60)
    filler = [hit(i, DAY, 0.65) for i in range(3, 9)]
    same = lambda a, b: {a.memory_id, b.memory_id} == {1, 9}  # noqa: E731
    assert lift([old, mid, *filler, far], same, depth=2)[0] == 1  # past the depth: unseen
    out = ids(supersede.supersede([old, mid, *filler, far], same, 0.8, 2, ts=lambda c: c.ts, reach=20))
    assert out[:3] == [9, 1, 2]  # lifted just above the stale one; the rest keep their order
    weak = hit(9, 40 * DAY, 0.50)  # 0.50 < 0.8 * 0.70: reach never overrides the relevance share
    assert ids(supersede.supersede([old, mid, *filler, weak], same, 0.8, 2, ts=lambda c: c.ts, reach=20))[0] == 1


def test_reachable_keeps_the_head_and_only_the_hits_that_could_move():
    head = [hit(1, 10 * DAY, 0.70), hit(2, 20 * DAY, 0.60)]
    below = [hit(3, 30 * DAY, 0.50), hit(4, 5 * DAY, 0.65), hit(5, 30 * DAY, 0.40)]
    got = ids(supersede.reachable([*head, *below], 0.8, 2, 10, ts=lambda c: c.ts))
    assert got == [1, 2, 3]  # 4 is older than the whole head, 5 under 0.8 x 0.60
    # `shares` (recall: a stored token among the head's slot words) leaves out a hit that shares none.
    assert ids(supersede.reachable([*head, *below], 0.8, 2, 10, ts=lambda c: c.ts, shares=lambda c: False)) == [1, 2]


def test_an_older_hit_below_is_never_lifted():
    new, old = hit(1, 40 * DAY, 0.70), hit(2, 0, 0.69)
    assert lift([new, old], lambda a, b: True) == [1, 2]


def test_a_chain_of_updates_puts_the_newest_first():
    first, second, third = hit(1, 0, 0.70), hit(2, 30 * DAY, 0.68), hit(3, 60 * DAY, 0.66)
    assert lift([first, second, third], lambda a, b: True)[0] == 3


def test_turns_of_one_conversation_are_never_an_old_and_a_new_state():
    """Issue 10: two turns 30 s apart passed "cosine >= 0.92" and the later one got x1.3."""
    none: frozenset[str] = frozenset()
    assert not supersede.same_slot(0.0, 30.0, {"home"}, {"home"}, none, none, 1800.0)
    assert supersede.same_slot(0.0, 2 * DAY, {"home"}, {"home"}, none, none, 1800.0)
    assert not supersede.same_slot(0.0, 2 * DAY, {"home"}, {"job"}, none, none, 1800.0)
    assert not supersede.same_slot(0.0, 2 * DAY, set(), set(), none, none, 1800.0)  # no lineage, no shared word
    assert supersede.same_slot(0.0, 2 * DAY, set(), set(), {"公斤", "上秤"}, {"公斤"}, 1800.0)  # 82 kg, then 76 kg
    assert not supersede.same_slot(0.0, 20.0, set(), set(), {"公斤"}, {"公斤"}, 1800.0)


def test_a_slot_is_named_by_informative_words_not_by_numbers_or_dates():
    words = supersede.slot_words("2026-05-09 用户说：上秤七十六公斤，76kg", 6.5)
    assert "公斤" in words and not any(ch.isdigit() for w in words for ch in w)
    assert "我" not in words and "了" not in words


@pytest.mark.parametrize(("query", "expected"), [
    ("我现在住哪", True), ("我还抽烟不", True), ("我跟我爸和好了没", True), ("我今年多大了", True),
    ("where do I live now", True),
    ("我以前住哪", False), ("刚认识的时候我住哪", False), ("我那只鸟当初多少钱买的", False),
    ("我之前养的那只鸟是啥品种来着", False), ("我还记得那首歌吗", False), ("我喜欢吃什么还是喝什么", False),
    ("我一个月到手多少", False), ("我最近在干嘛\n你猜", False), ("我还很喜欢听音乐，特别是民谣", False),
    ("你还抽烟吗？", True),
])
def test_a_question_about_now_is_told_from_one_about_the_past(query, expected):
    assert supersede.asks_about_now(query) is expected


def test_the_present_default_takes_a_question_about_the_user_that_names_no_time():
    assert supersede.asks_about_present("我一个月到手多少", True, False, True)
    assert not supersede.asks_about_present("我一个月到手多少", True, False, False)  # shipped off (measured)
    assert not supersede.asks_about_present("五一我去哪玩了", True, True, True)  # a named time
    assert not supersede.asks_about_present("我去哪玩了", True, False, True)  # a completed event
    assert not supersede.asks_about_present("我以前一个月到手多少", True, False, True)


# A history where the stale turn matches the question's words better than the update does.
HISTORY = [
    ("2026-02-20T21:00:00+08:00", "u1", "回来一个礼拜天天被投喂，今天上秤八十二公斤，我妈还嫌我吃得少"),
    ("2026-03-02T20:00:00+08:00", "u2", "周末跟同事去爬了紫金山，山顶风好大"),
    ("2026-05-09T21:00:00+08:00", "u3", "上秤七十六公斤，裤腰都松了一圈，苏晴说我下巴终于出来了"),
    ("2026-05-12T20:00:00+08:00", "u4", "新买的跑鞋到了，明天开始晨跑"),
]
NOW = datetime.fromisoformat("2027-06-01T12:00:00+08:00").timestamp()


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("supersede")
    history = folder / "history.jsonl"
    history.write_text("".join(json.dumps({"ts": ts, "turn_id": tid, "role": "user", "text": text},
                                          ensure_ascii=False) + "\n" for ts, tid, text in HISTORY), encoding="utf-8")
    c = fresh_db(folder / "anima.db")
    import_history(c, embedder(), history, NOW)
    return c


def top(conn, query, params=None, as_of=None):
    hits = recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=NOW, params=params, as_of=as_of).hits
    return [h.turn_id for h in hits]


def test_a_question_about_now_finds_the_newer_weight_first(conn):
    # The rule's case: by cosine and words the stale turn leads. The hubness correction alone happens to put
    # u3 first in this small history, so the rule is shown with it off, then the shipped ranking.
    plain = replace(params_from_settings(SETTINGS), use_hubness=False)
    off = replace(plain, use_newer=False)
    assert top(conn, "我现在多少斤", off).index("u1") < top(conn, "我现在多少斤", off).index("u3")
    assert top(conn, "我现在多少斤", plain).index("u3") < top(conn, "我现在多少斤", plain).index("u1")
    ranked = top(conn, "我现在多少斤")
    assert ranked.index("u3") < ranked.index("u1")


def test_a_question_about_the_past_or_as_of_keeps_the_old_statement(conn):
    off = replace(params_from_settings(SETTINGS), use_newer=False)
    assert top(conn, "我以前多少斤") == top(conn, "我以前多少斤", off)  # nothing superseded
    before = datetime.fromisoformat("2026-04-01T00:00:00+08:00").timestamp()
    assert top(conn, "我现在多少斤", as_of=before)[0] == "u1"  # --as-of: the update had not happened yet
