"""The told rule (engine/chat/told.py), both ways, and her prompt's composition within its budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.chat import feelings
from engine.chat.prompt import PromptFacts, compose, load_template
from engine.chat.told import overlap, reply_tells
from engine.errors import ConfigError

EVENT = "下午在西湖边画了一张速写，遇到一只橘猫一直蹭我的腿"


def test_a_reply_that_tells_the_event_in_its_own_words_tells_it() -> None:
    reply = "我今天下午去西湖边画速写啦，还遇到一只橘猫，一直蹭我的腿，好可爱！"
    assert reply_tells(EVENT, reply, 0.4)


def test_a_reply_about_something_else_does_not_tell_it() -> None:
    reply = "你今天过得怎么样？我下午一直在家，没干什么特别的。"
    assert not reply_tells(EVENT, reply, 0.4)
    assert overlap(EVENT, reply) < 0.2


def test_sharing_a_word_or_two_is_not_telling() -> None:
    assert not reply_tells(EVENT, "西湖边人很多吧？", 0.4)


def test_the_mood_words_come_from_the_snapshot_when_given_else_from_the_numbers() -> None:
    assert feelings.mood_words({"v": 0.4, "a": 0.3, "words_zh": ["难过", "心疼"]}) == ["难过", "心疼"]
    assert feelings.mood_words({"v": -0.6, "a": -0.2}) == ["难过"]
    assert feelings.mood_words({"v": 0.05, "a": 0.0}) == ["平静"]
    assert feelings.mood_words({"v": 0.3, "a": 0.3}) == ["开心"]


def _facts(**extra: object) -> PromptFacts:
    base: dict[str, object] = {"name": "小安", "persona": "随和", "mood_words": "平静", "energy_words": "精神还可以"}
    return PromptFacts(**{**base, **extra})  # type: ignore[arg-type]


def test_without_memories_she_is_told_she_remembers_nothing_related() -> None:
    text, _ = compose(load_template(), _facts(), 2400)
    assert "没有想起" in text and "小安" in text and "平静" in text


def test_over_budget_memories_go_first_then_the_offer_never_who_she_is() -> None:
    memories = [f"[m{i}] 很久以前的一件事，编号{i}，" + "细节" * 20 for i in range(30)]
    text, kept = compose(load_template(), _facts(memories=memories, offer="今天看到彩虹"), 800)
    assert len(text) <= 800 and kept and "小安" in text and "[m0]" in text and "[m29]" not in text
    text, kept = compose(load_template(), _facts(memories=memories, offer="今天看到彩虹" * 80), 600)
    assert not kept and "彩虹" not in text and "小安" in text


def test_a_template_with_an_unknown_placeholder_is_refused_at_load(tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text('identity = "你是{name}，住在{city}"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="city"):
        load_template(str(bad))
    good = tmp_path / "g.toml"
    good.write_text('identity = "我叫{name}。"\nrules = "说话简短。"\n', encoding="utf-8")
    text, _ = compose(load_template(str(good)), _facts(), 2400)
    assert text == "我叫小安。\n\n说话简短。"
