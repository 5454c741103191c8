"""The rule gate, lineage keys, the same-fact test, the validator and the rules operator, one rule at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.consolidate.gate import Episode, gate_reason, group_near_duplicates, is_question
from engine.consolidate.operator_rules import rules_plan
from engine.consolidate.plan import Candidate, Entry, Operation, Plan, same_fact
from engine.consolidate.run import rounds_of
from engine.consolidate.validate import Limits, PlanRejected, retire_allowance, validate_plan
from engine.errors import ConfigError
from engine.memory.lineage import LineageMatcher, choose_key, parse_vocabulary, vocabulary
from engine.memory.statement import statement_for
from tests.memory_helpers import embedder


def episode(text: str, **overrides) -> Episode:
    fields = dict(id=1, source="chat", role="user", text=text, ts=0.0, ts_iso="2026-06-01T22:00:00+08:00",
                  salience=0.6, importance=5.0, echo_of_injection=None, message_status="sent",
                  message_origin="api", told=None)
    fields.update(overrides)
    return Episode(**fields)


@pytest.mark.parametrize(("overrides", "text", "reason"), [
    ({}, "我住在上海徐汇", None),
    ({"role": "companion"}, "梧桐秋天会落很多叶子", "companion_reply"),
    ({"echo_of_injection": "inj_1"}, "我住在上海徐汇", "echo"),
    ({"message_status": "draft"}, "我住在上海徐汇", "not_sent"),
    ({"message_origin": "heartbeat"}, "我住在上海徐汇", "system"),
    ({}, "[system] 用户已连接", "system"),
    ({}, "我现在住哪？", "question"),
    ({}, "我住在哪里来着", "question"),
    ({}, "嗯嗯", "too_short"),
    ({"salience": 0.1}, "我住在上海徐汇", "low_salience"),
    ({"source": "self_life", "role": None, "told": 0}, "她给薄荷换盆", "untold_life"),
    ({"source": "self_life", "role": None, "told": 1}, "她给薄荷换了一个新盆", None),
])
def test_gate_rules(overrides: dict, text: str, reason: str | None) -> None:
    assert gate_reason(episode(text, **overrides), salience_floor=0.3) == reason


@given(st.text(min_size=1, max_size=30))
def test_a_sentence_ending_in_a_question_mark_is_never_a_candidate(text: str) -> None:
    assert gate_reason(episode(text + "？"), 0.0) in ("question", "too_short", "system")
    assert is_question(text + "?")


def test_ten_mg_is_not_one_hundred_mg_however_close_the_vectors() -> None:
    assert not same_fact("每天吃10mg", "每天吃100mg", cosine=0.999)
    assert not same_fact("我住在闵行", "我住在徐汇", cosine=0.99)
    assert same_fact("我住在闵行", "对，我住在闵行", cosine=0.96)
    assert same_fact("我住在闵行", "我住在闵行。", cosine=0.5)  # identical words need no vector
    assert same_fact("我住在闵行", "我住在闵行区", cosine=0.96)
    assert not same_fact("我住在闵行", "我住在闵行区", cosine=0.80)
    assert not same_fact("我怕蛇", "我不怕蛇了", cosine=0.99)  # negation flips the fact
    assert not same_fact("我住在闵行", "我住在闵行，离医院近一点，但是那棵梧桐看不到了", cosine=0.99)


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=10_000))
def test_different_numbers_are_never_the_same_fact(a: int, b: int) -> None:
    assert same_fact(f"每天走{a}步", f"每天走{b}步", cosine=1.0) == (a == b)


def test_near_duplicates_group_under_their_first_sentence() -> None:
    texts = ["我住在闵行", "对，我住在闵行", "我住在徐汇", "我住在闵行！"]
    vecs = embedder().embed_passages(texts)
    assert group_near_duplicates(texts, vecs) == [[0, 1, 3], [2]]


@pytest.mark.parametrize(("text", "key"), [
    ("我住在上海徐汇，窗外能看到一棵很老的梧桐", "home"),
    ("我搬到了闵行，离医院近一点", "home"),
    ("我换到白班了，终于可以晚上睡觉了", "work_shift"),
    ("我是医院的夜班护士", "work_shift"),
    ("我养了一只仓鼠，叫芝麻", "pet:芝麻"),
    ("我现在喜欢上了毛不易，周深听得少了", "music_taste"),
    ("我对青霉素过敏", "allergy:青霉素"),
    ("我和男朋友分手了", "relationship:男朋友"),
    ("我妈的生日是五月三号", "birthday:我妈"),
    ("芝麻咬断了我的耳机线，第三根了", "none"),  # about the pet, but not what it is: no key
    ("我喜欢下雨天窝在家里看宫崎骏", "none"),
    ("今天天气真好", "none"),
    ("每天吃10mg", "none"),
])
def test_lineage_keys_of_sentences(text: str, key: str) -> None:
    matcher = LineageMatcher(embedder())
    (match,) = matcher.match([text], embedder().embed_passages([text]))
    assert match.key == key, (text, match)


def test_a_name_key_without_a_name_is_none() -> None:
    vocab = vocabulary()
    scores = [1.0 if spec.name == "pet:{name}" else 0.0 for spec in vocab.keys]
    assert choose_key(vocab, "我养了一只仓鼠", scores).key == "none"
    assert choose_key(vocab, "我养了一只仓鼠，叫豆豆", scores).key == "pet:豆豆"


def test_the_vocabulary_file_is_validated() -> None:
    with pytest.raises(ConfigError, match="prototype"):
        parse_vocabulary({"key": [{"name": "home", "prototypes": []}]})
    with pytest.raises(ConfigError, match="name_patterns"):
        parse_vocabulary({"key": [{"name": "pet:{name}", "prototypes": ["x"]}]})
    assert {"home", "job", "work_shift", "pet", "diet", "allergy", "music_taste", "relationship", "birthday",
            "routine", "goal", "exam"} <= vocabulary().families()


# ---- validator and rules operator over hand-made entries ----

def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=8).astype(np.float32)
    return v / np.linalg.norm(v)


def cand(cid: str, text: str, key: str = "none", ts: float = 100.0, v: np.ndarray | None = None) -> Candidate:
    return Candidate(cid, (int(cid[1:]),), "user", key, text, ts, "2026-07-01", vec(1) if v is None else v)


def entry(eid: str, text: str, key: str = "none", valid_from: float = 10.0, v: np.ndarray | None = None) -> Entry:
    return Entry(eid, int(eid[1:]), "user", key, statement_for("user", "2026-06-01", text), text, valid_from,
                 vec(2) if v is None else v)


ACTIVE = {e.eid: e for e in [entry("e1", "我住在徐汇", "home"), entry("e2", "医生让我每天吃100mg", v=vec(3)),
                             entry("e3", "我怕蛇", v=vec(4)), entry("e4", "我上夜班", "work_shift")]}
LIMITS = Limits(max_retire_fraction=0.25, min_retire_allowance=1)


def check(plan_ops: list[Operation], candidates: list[Candidate], active=ACTIVE, before: int = 4) -> None:
    validate_plan(Plan(tuple(plan_ops), "test"), candidates, active, active_before_run=before, retired_so_far=0,
                  limits=LIMITS)


@pytest.mark.parametrize(("ops", "cands", "why"), [
    ([], [cand("c1", "x")], "exactly one"),
    ([Operation("c1", "added"), Operation("c1", "added")], [cand("c1", "x"), cand("c2", "y")], "more than one"),
    ([Operation("c9", "added")], [cand("c1", "x")], "unknown candidate"),
    ([Operation("c1", "deleted", ("e1",))], [cand("c1", "x")], "unknown action"),
    ([Operation("c1", "added", ("e1",))], [cand("c1", "x")], "no prior"),
    ([Operation("c1", "merged")], [cand("c1", "x")], "at least one"),
    ([Operation("c1", "superseded", ("e7",))], [cand("c1", "我住在闵行", "home")], "does not exist"),
    ([Operation("c1", "superseded", ("e1", "e1"))], [cand("c1", "我住在闵行", "home")], "more than once"),
    ([Operation("c1", "merged", ("e2",))], [cand("c1", "医生让我每天吃10mg", v=vec(3))], "not the same fact"),
    ([Operation("c1", "superseded", ("e3",))], [cand("c1", "我住在闵行", "home")], "lineage keys"),
    ([Operation("c1", "superseded", ("e3",))], [cand("c1", "我不怕蛇了")], "lineage keys"),
    ([Operation("c1", "superseded", ("e1",))], [cand("c1", "我住在闵行", "home", ts=1.0)], "older"),
    ([Operation("c1", "superseded", ("e1",)), Operation("c2", "superseded", ("e4",))],
     [cand("c1", "我住在闵行", "home"), cand("c2", "我上白班", "work_shift")], "at most 1"),
])
def test_validator_rejects_the_whole_plan(ops: list[Operation], cands: list[Candidate], why: str) -> None:
    with pytest.raises(PlanRejected, match=why):
        check(ops, cands)


def test_validator_accepts_a_sound_plan() -> None:
    check([Operation("c1", "superseded", ("e1",)), Operation("c2", "merged", ("e2",)), Operation("c3", "added")],
          [cand("c1", "我住在闵行", "home"), cand("c2", "医生让我每天吃100mg。", v=vec(3)), cand("c3", "我会游泳")])


def test_validator_enforces_the_size_budget() -> None:
    with pytest.raises(PlanRejected, match="budget"):
        validate_plan(Plan((Operation("c1", "added"),), "t"), [cand("c1", "长" * 500)], ACTIVE,
                      active_before_run=4, retired_so_far=0, limits=Limits(active_budget_chars=300))


@given(st.integers(min_value=0, max_value=1000))
def test_retire_allowance_is_a_quarter_of_active_entries_but_at_least_one(active: int) -> None:
    allowance = retire_allowance(active, LIMITS)
    assert allowance >= 1 and (allowance <= 0.25 * active or allowance == 1)


def test_rules_operator_supersedes_by_key_merges_duplicates_and_adds_the_rest() -> None:
    plan = rules_plan([cand("c1", "我住在闵行", "home"), cand("c2", "医生让我每天吃100mg。", v=vec(3)),
                       cand("c3", "医生让我每天吃10mg", v=vec(3)), cand("c4", "我不怕蛇了", v=vec(4))], ACTIVE)
    assert plan.operations == (Operation("c1", "superseded", ("e1",)), Operation("c2", "merged", ("e2",)),
                               Operation("c3", "added"), Operation("c4", "added"))
    check(list(plan.operations), [cand("c1", "我住在闵行", "home"), cand("c2", "医生让我每天吃100mg。", v=vec(3)),
                                  cand("c3", "医生让我每天吃10mg", v=vec(3)), cand("c4", "我不怕蛇了", v=vec(4))])


def test_rounds_put_each_keys_later_statements_in_later_rounds() -> None:
    cands = [cand("c1", "徐汇", "home", 1), cand("c2", "怕蛇", ts=2), cand("c3", "闵行", "home", 3),
             cand("c4", "浦东", "home", 4)]
    assert [[c.cid for c in r] for r in rounds_of(cands)] == [["c1", "c2"], ["c3"], ["c4"]]
