"""A dialogue query (the last turns, one per line) weighs the keyword lane as much as the vector lane (issue 27).

In a dialogue e5 matches the small talk around the topic: "你有没有什么建议" is near any line that thanks
someone for advice. The keyword lane sees only the informative words (元旦晚会). A one-line question
keeps the small keyword weight chosen on zh-dev2.
"""

from dataclasses import replace

import pytest

from engine.memory.ingest import TurnInput, record_turns_bulk
from engine.memory.recall import params_from_settings, recall
from tests.memory_helpers import ON, SETTINGS, embedder, fresh_db

NOW = 1.8e9
TEXTS = ["好的，我会考虑尝试这些活动。谢谢你的建议和关心，让我心情好多了", "在元旦晚会上，和同班同学们一起制作了彩纸灯笼和剪纸",
         "你说得对，有什么建议我都愿意听听看", "周末去爬山了，风好大"]
DIALOGUE = "嘿，你知道吗？元旦晚会我要表演魔术！\n我也会有点紧张呢，你有没有什么建议可以让我不那么紧张？\n对了，我要穿什么好呢？"


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    c = fresh_db(tmp_path_factory.mktemp("dialogue") / "anima.db")
    turns = [TurnInput(turn_id=f"t{i}", user=text, companion=None, ts_iso=f"2026-01-0{i + 1}T12:00:00+08:00")
             for i, text in enumerate(TEXTS)]
    record_turns_bulk(c, embedder(), turns, now=NOW)
    return c


def top(conn, query, scale):
    params = replace(params_from_settings(SETTINGS), dialogue_text_scale=scale)
    return [h.turn_id for h in recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=NOW, params=params).hits]


def test_the_turn_that_shares_the_dialogues_topic_words_beats_small_talk_about_advice(conn):
    assert top(conn, DIALOGUE, 1.0)[0] == "t0"  # the keyword weight of a one-line question: small talk wins
    assert top(conn, DIALOGUE, SETTINGS.dialogue_text_scale)[0] == "t1"


def test_a_one_line_question_is_not_scaled(conn):
    question = "元旦晚会我要表演魔术，你有没有什么建议"
    assert top(conn, question, 1.0) == top(conn, question, SETTINGS.dialogue_text_scale)
