"""The hubness correction on the bundled model, in a real database: chat about nothing sits near the
background lines, and a memory that says something wins the near-tie it would otherwise lose to it.

The history is written for this test (no ../shared): nine lines of chat about nothing in particular and
nine that each say one thing, one a day.
"""

from dataclasses import replace
from pathlib import Path

import pytest

from engine.memory.background import background_levels
from engine.memory.ingest import TurnInput, record_turns_bulk
from engine.memory.recall import params_from_settings, recall
from tests.memory_helpers import ON, SETTINGS, embedder, fresh_db

CHATTY = ["哈哈哈好的呀，那就这样吧", "嗯嗯，我也觉得还行吧，就那样", "今天也没干啥，随便待着", "好累啊，不想说话了",
          "哈哈你说得对", "在吗在吗，陪我聊会儿天呗", "今天天气还不错，出去走了走", "吃了吃了，你呢", "周末就在家躺着，啥也没干"]
SPECIFIC = ["周六凌晨三点起来爬黄山，在光明顶看到了云海日出", "体检报告出来了，轻度脂肪肝，医生让少吃夜宵",
            "我妹考上了南京大学的日语专业", "新买的二手琴是雅马哈的，八百块", "房东说下个月房租涨两百",
            "周末跟阿杰去钓鱼，钓了三条鲫鱼", "公司年会抽奖抽到了一个空气炸锅", "我最近在学游泳，已经能换气了",
            "昨晚加班到十一点，回家煮了碗面"]
NOW = 1796083200.0  # 2026-12-01


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory):
    c = fresh_db(Path(tmp_path_factory.mktemp("hubness")) / "anima.db")
    turns = [TurnInput(turn_id=f"t{i}", user=text, companion=None, ts_iso=f"2026-10-{i + 1:02d}T20:00:00+08:00")
             for i, text in enumerate(CHATTY + SPECIFIC)]
    record_turns_bulk(c, embedder(), turns, now=NOW)
    return c


def test_chat_about_nothing_sits_nearer_to_the_background_than_memories_that_say_something():
    levels = background_levels(embedder(), embedder().embed_passages(CHATTY + SPECIFIC))
    chatty, specific = levels[: len(CHATTY)], levels[len(CHATTY):]
    assert chatty.mean() > specific.mean() + 0.01
    assert sorted(range(len(levels)), key=lambda i: -levels[i])[0] < len(CHATTY)  # the nearest is chat


def top(conn, query: str, **rank: object) -> str:
    params = replace(params_from_settings(SETTINGS), **rank)
    hits = recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=NOW, k=3, params=params).hits
    return hits[0].text


def test_where_i_went_at_the_weekend_is_the_fishing_trip_not_the_lazy_weekend(conn):
    """Both say 周末; the lazy one is a hub (near any chat) and led by raw cosine until the correction."""
    assert top(conn, "我周末去哪玩了") == "周末跟阿杰去钓鱼，钓了三条鲫鱼"
    assert top(conn, "我周末去哪玩了", use_hubness=False) == "周末就在家躺着，啥也没干"
    assert top(conn, "我周末去哪玩了", hubness_weight=0.0) == "周末就在家躺着，啥也没干"


def test_a_clear_answer_is_not_moved(conn):
    """The correction orders near-equals; a memory that plainly answers stays first either way."""
    for query, answer in (("我妹考上了哪个学校", "我妹考上了南京大学的日语专业"), ("我的琴多少钱买的", "新买的二手琴是雅马哈的，八百块"),
                          ("我体检查出啥毛病了", "体检报告出来了，轻度脂肪肝，医生让少吃夜宵")):
        assert top(conn, query) == answer
        assert top(conn, query, use_hubness=False) == answer
