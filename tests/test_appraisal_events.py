"""Appraisal of the user's words as a companion: event types, who they happen to, negation, intensity (issue 12)."""

from __future__ import annotations

import json
import tomllib
from collections import Counter, defaultdict
from importlib import resources
from pathlib import Path

import pytest

from engine.appraisal import appraise, classify, read_events, text_push
from engine.appraisal.events import _load
from engine.errors import ConfigError

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.mark.parametrize("line", ["我妈住院了", "我们分开吧", "我家猫昨天走了", "我外婆去世了", "我失业了",
                                  "我和女朋友分手了", "公司裁员，我被裁了",
                                  "我奶奶病得很重", "我不想活了"])
def test_user_bad_news_moves_her_toward_concern_not_her_own_loss(line: str) -> None:
    v, a, d = text_push(line)
    assert classify(line) == "concern"
    # Concern: she is stirred (arousal up) and moderately saddened; an own loss would lower arousal.
    assert a > 0 > v and abs(v) < 0.5
    assert d <= 0


@pytest.mark.parametrize("line", ["麻烦你帮我看一下这段代码", "滚动条坏了", "滚筒洗衣机怎么用", "这个视频笑死了",
                                  "我走了，去上班", "我把垃圾倒了"])
def test_requests_and_look_alike_words_are_no_news(line: str) -> None:
    assert text_push(line) == (0.0, 0.0, 0.0)
    assert classify(line) == "neutral"


@pytest.mark.parametrize("line", ["滚", "你真烦", "闭嘴", "我讨厌你", "你这个笨蛋"])
def test_hostility_at_her_lowers_valence_without_raising_dominance(line: str) -> None:
    v, _a, d = text_push(line)
    assert classify(line) == "hurt"
    assert v < 0 and d <= 0


def test_running_oneself_down_is_the_users_distress_not_an_attack_on_her() -> None:
    assert classify("我真蠢") == "concern"
    assert classify("你真蠢") == "hurt"


def test_kind_words_warm_her_and_a_cue_inside_a_longer_one_does_not_count() -> None:
    assert classify("想死你了") == "warmth"   # "想死你" (miss you so), not "想死"
    assert classify("谢谢你一直陪着我") == "warmth"


def test_user_joy_gladdens_her() -> None:
    for line in ("我考上研究生了！", "我升职了", "我妈出院了", "今天和朋友去玩，特别开心"):
        v, a, _d = text_push(line)
        assert classify(line) == "gladness" and v > 0 and a > 0, line


def test_negation_denies_a_misfortune_and_turns_good_news_into_bad() -> None:
    assert text_push("我没生病") == (0.0, 0.0, 0.0)
    assert text_push("我不难过，别担心") == (0.0, 0.0, 0.0)
    assert classify("我没考上") == "concern"
    assert classify("今天不太开心") == "concern"
    assert text_push("今天不太开心")[0] > text_push("今天很难过")[0]   # a negated joy weighs less


def test_a_not_a_question_is_not_a_negation() -> None:
    (reading,) = read_events("你是不是生病了")
    assert not reading.negated and reading.subject == "her" and reading.response == "own"


def test_who_it_happens_to_is_read_from_the_clause() -> None:
    assert [r.subject for r in read_events("我家猫昨天走了")] == ["close"]
    assert read_events("我走了") == []   # "走了" is a death only for someone close
    near, far = text_push("我外婆去世了"), text_push("新闻里有个明星去世了")
    assert far[0] < 0 and abs(far[0]) < abs(near[0]) / 2   # sympathy at a remove
    other = read_events("我老板真讨厌")
    assert other[0].subject == "other" and other[0].response == "concern"


def test_degree_words_scale_the_response() -> None:
    strong, plain, weak = (abs(text_push(t)[0]) for t in ("我非常难过", "我难过", "我有点难过"))
    assert strong > plain > weak > 0


def test_her_own_reply_is_not_appraised() -> None:
    assert appraise(None, "别难过，抱抱你", None) == (0.0, 0.0, 0.0)
    assert appraise("我妈住院了", "别难过，抱抱你", None) == text_push("我妈住院了")


@pytest.mark.parametrize("name", ["appraisal_lines.jsonl", "appraisal_holdout.jsonl"])
def test_labelled_lines_are_read_right_in_every_class(name: str) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    per: dict[str, Counter[bool]] = defaultdict(Counter)
    for row in rows:
        per[row["label"]][classify(row["text"]) == row["label"]] += 1
    assert set(per) >= {"concern", "gladness", "warmth", "hurt", "neutral"}
    assert len(rows) >= 40
    for label, hits in per.items():
        assert hits[True] / (hits[True] + hits[False]) >= 0.85, (label, hits)


def test_lexicon_with_an_unknown_event_kind_is_a_config_error() -> None:
    raw = tomllib.loads((resources.files("engine") / "data" / "appraisal_lexicon.toml").read_text(encoding="utf-8"))
    raw["events"]["illness"]["kind"] = "sadness"
    with pytest.raises(ConfigError, match="events.illness.kind"):
        _load(raw)
    del raw["responses"]
    with pytest.raises(ConfigError, match="malformed"):
        _load(raw)
