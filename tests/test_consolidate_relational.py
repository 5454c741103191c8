"""Relational memory (mem_relational): each kind detected and written from evidence, deduplicated, superseded, idempotent."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from engine.consolidate.gate import Episode
from engine.consolidate.plan import Operation, Plan
from engine.consolidate.relational import RelMatch, detect, detect_lifts, list_relations, parse_rules
from engine.consolidate.relational_plan import (
    RelCandidate,
    RelEntry,
    plan_relations,
    rel_rules_plan,
    validate_rel_plan,
)
from engine.consolidate.run import consolidate_once
from engine.consolidate.validate import Limits, PlanRejected
from engine.errors import ConfigError
from engine.memory.ingest import TurnInput, record_turn
from engine.settings import Settings
from engine.store.core import read_switches
from engine.store.queries import q
from tests.conftest import run_anima
from tests.memory_helpers import add_life_event, embedder, fresh_db


def say(conn, turn: str, user: str, day: int, reply: str = "嗯。") -> None:
    record_turn(conn, embedder(), TurnInput(turn, user, reply, f"2026-08-{day:02d}T22:00:00+08:00"), 0)


def run(conn, now: float = 1.0) -> dict:
    return consolidate_once(conn, embedder(), Settings(), read_switches(conn), now)


def kinds(rows: list[dict]) -> list[tuple[str, str]]:
    return [(r["kind"], r["statement"].partition("用户说：")[2]) for r in rows]


@pytest.mark.parametrize(("text", "kind", "slot", "value"), [
    ("以后你就叫我小林吧", "nickname", "user", "小林"),
    ("以后叫你阿安", "nickname", "companion", "阿安"),
    ("我们每天晚上都说晚安吧", "ritual", "", "每天晚上都说晚安吧"),
    ("周五一起看电影吧", "ritual", "", "周五一起看电影吧"),
    ("每次加班我都点炸鸡", "pattern", "加班", "点炸鸡"),
    ("我一紧张就想吃甜的", "pattern", "紧张", "想吃甜的"),
    ("别再提他了", "taboo", "", "提他"),
    ("不要叫我宝宝", "taboo", "", "叫我宝宝"),
])
def test_each_kind_is_detected_from_its_cues(text: str, kind: str, slot: str, value: str) -> None:
    (match,) = detect(text)
    assert (match.kind, match.slot, match.value) == (kind, slot, value)


@pytest.mark.parametrize("text", ["我住在上海徐汇，窗外能看到一棵很老的梧桐", "我是医院的夜班护士，今天连上了三个大夜，腿都肿了",
                                  "我每天早上六点起床跑步", "我叫了外卖", "晚安，明天见", "我不想每天晚上都加班了"])
def test_ordinary_sentences_are_not_relational(text: str) -> None:
    assert detect(text) == []


def test_an_inside_joke_is_her_coined_phrase_repeated_by_the_user() -> None:
    assert [m.kind for m in detect("今天路上又看到那个长长的了", ["那个长长的"])] == ["inside_joke"]
    assert detect("今天路上又看到那个长长的了", []) == []
    assert detect("那个长长的", ["那个长长的"]) == []  # quoting her whole phrase back alone is not a joke yet


def test_the_vocabulary_is_closed_and_checked() -> None:
    with pytest.raises(ConfigError, match="friendship"):
        parse_rules({"rule": [{"kind": "friendship", "regex": "x"}]})
    with pytest.raises(ConfigError, match="bad regular expression"):
        parse_rules({"rule": [{"kind": "taboo", "regex": "(unclosed"}]})


def test_every_kind_is_written_from_the_users_sentence_and_its_date(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "rel.db")
    say(conn, "t1", "以后你就叫我小林吧", 1)
    say(conn, "t2", "我们每天晚上都说晚安吧", 2, "好，那我以后说到蛇都只说'那个长长的'。")
    say(conn, "t3", "每次加班我都点炸鸡", 3)
    say(conn, "t4", "别再提他了", 4)
    say(conn, "t5", "今天路上又看到那个长长的了，吓死", 5)
    report = run(conn)
    assert report["relations"]["added"] == 5 and not report["fallback"]
    rows = list_relations(conn)
    assert kinds(rows) == [("nickname", "以后你就叫我小林吧"), ("ritual", "我们每天晚上都说晚安吧"),
                           ("pattern", "每次加班我都点炸鸡"), ("taboo", "别再提他了"),
                           ("inside_joke", "今天路上又看到那个长长的了，吓死")]
    assert rows[0]["statement"] == "2026-08-01 用户说：以后你就叫我小林吧"
    episode = conn.execute("SELECT e.id FROM mem_episodic e JOIN chat_message m ON m.id = e.message_id "
                           "WHERE m.turn_id = 't1' AND m.role = 'user'").fetchone()[0]
    assert rows[0]["evidence"] == [episode] and all(r["status"] == "active" for r in rows)
    # Idempotent: a second run has nothing new and changes nothing.
    again = run(conn, 2.0)
    assert again["relations"] == {"candidates": 0, "kinds": {}, "added": 0, "merged": 0, "superseded": 0,
                                  "retired": 0, "lifted": 0, "fallback": False}
    assert list_relations(conn, include_history=True) == rows


def test_the_same_entry_said_again_is_one_entry_with_more_evidence(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "dedup.db")
    say(conn, "t1", "我们每天晚上都说晚安吧", 1)
    say(conn, "t2", "每天晚上说晚安", 2)
    run(conn)
    say(conn, "t3", "叫我小林", 3)
    say(conn, "t4", "以后你就叫我小林吧", 4)
    say(conn, "t5", "我们每天晚上都说晚安吧", 5)
    report = run(conn, 2.0)
    assert report["relations"]["merged"] == 2 and report["relations"]["added"] == 1
    rows = list_relations(conn, include_history=True)
    assert kinds(rows) == [("ritual", "我们每天晚上都说晚安吧"), ("nickname", "叫我小林")]
    assert [len(r["evidence"]) for r in rows] == [3, 2]


def test_a_new_nickname_supersedes_the_old_one_for_the_same_person_only(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "nick.db")
    say(conn, "t1", "以后叫我小林", 1)
    say(conn, "t2", "以后叫你阿安", 2)
    run(conn)
    say(conn, "t3", "还是叫我阿林吧", 9)
    say(conn, "t4", "每次加班我都点炸鸡", 10)
    say(conn, "t5", "每次加班我都自己带饭", 12)  # the same trigger, a new habit: the old one ends
    report = run(conn, 2.0)
    assert report["relations"]["superseded"] == 2 and report["relations"]["retired"] == 2
    every = {r["statement"].partition("：")[2]: r for r in list_relations(conn, include_history=True)}
    old, new = every["以后叫我小林"], every["还是叫我阿林吧"]
    assert (old["status"], old["superseded_by"], old["valid_to"]) == ("superseded", new["id"], new["valid_from"])
    assert every["以后叫你阿安"]["status"] == "active"  # her nickname is another slot
    assert every["每次加班我都点炸鸡"]["superseded_by"] == every["每次加班我都自己带饭"]["id"]
    assert kinds(list_relations(conn)) == [("nickname", "以后叫你阿安"), ("nickname", "还是叫我阿林吧"),
                                           ("pattern", "每次加班我都自己带饭")]
    # As of the first days, the old nickname was the one in force.
    then = list_relations(conn, as_of=old["valid_from"] + 3600)
    assert kinds(then) == [("nickname", "以后叫我小林")]


def test_never_from_her_replies_her_untold_life_or_questions(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "never.db")
    say(conn, "t1", "今天好累", 1, "那以后叫我小安吧，每天晚上我们一起说晚安。")
    say(conn, "t2", "可以叫你阿安吗？", 2)
    add_life_event(conn, "她决定每天晚上跟你说晚安", 1_785_000_000.0, told=0)
    conn.execute("INSERT INTO mem_episodic (source, life_event_id, ts, raw, salience, created_at) "
                 "VALUES ('self_life', (SELECT max(id) FROM life_event), 1785000000, '她决定每天晚上跟你说晚安', 0.9, 0)")
    report = run(conn)
    assert report["relations"]["candidates"] == 0 and list_relations(conn, include_history=True) == []


def test_an_invalid_relational_plan_is_rejected_and_falls_back_to_appending(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "fallback.db")
    say(conn, "t1", "以后叫我小林", 1)
    run(conn)
    (old,) = list_relations(conn)
    say(conn, "t2", "还是叫我阿林吧", 9)
    rows = conn.execute(q("unconsolidated_episodes"), {"limit": 10}).fetchall()
    passing = [Episode.from_row(r) for r in rows if r["role"] == "user"]
    strict = Limits(max_retire_fraction=0.0, min_retire_allowance=0)
    planned = plan_relations(conn, passing, strict)
    assert planned["rejection"] and "at most 0" in planned["rejection"]
    assert planned["report"]["added"] == 1 and planned["report"]["superseded"] == 0
    # Through a real run with a zero retire allowance the job records why and nothing old changes.
    settings = Settings()
    tight = replace(settings, consolidation=replace(settings.consolidation, max_retire_fraction=0.0,
                                                    min_retire_allowance=0))
    report = consolidate_once(conn, embedder(), tight, read_switches(conn), 2.0)
    assert report["fallback"] and any(r.startswith("relations:") for r in report["rejections"])
    assert [r for r in list_relations(conn, include_history=True) if r["id"] == old["id"]] == [old]
    assert len(list_relations(conn)) == 2


def test_the_validator_rejects_bad_relational_operations() -> None:
    nick = detect("叫我小林")[0]
    other = detect("叫我阿林")[0]
    entry = RelEntry("q1", 1, nick, "2026-08-01 用户说：叫我小林", 10.0)
    cand = RelCandidate("r1", (5,), other, "叫我阿林", 20.0, "2026-08-02")
    limits = Limits()
    assert rel_rules_plan([cand], {"q1": entry}).operations == (Operation("r1", "superseded", ("q1",)),)
    for bad, why in ((Plan((Operation("r1", "merged", ("q1",)),), "x"), "not the same"),
                     (Plan((Operation("r1", "superseded", ("q9",)),), "x"), "unknown"),
                     (Plan((Operation("r1", "added", ("q1",)),), "x"), "no prior"),
                     (Plan((), "x"), "exactly one")):
        with pytest.raises(PlanRejected, match=why):
            validate_rel_plan(bad, [cand], {"q1": entry}, limits)
    ritual = RelCandidate("r1", (5,), detect("周五一起看电影吧")[0], "周五一起看电影吧", 20.0, "2026-08-02")
    with pytest.raises(PlanRejected, match="cannot supersede"):
        validate_rel_plan(Plan((Operation("r1", "superseded", ("q1",)),), "x"), [ritual], {"q1": entry}, limits)


@pytest.mark.parametrize(("text", "value"), [
    ("现在可以提他了", "提他"), ("你可以叫我宝宝了", "叫我宝宝"), ("我不介意你问这个了", "问这个"),
    ("可以再跟我聊工作的事了", "聊工作的事"),
])
def test_a_lift_names_what_it_takes_back(text: str, value: str) -> None:
    assert detect_lifts(text) == [RelMatch("taboo", "", value)]


@pytest.mark.parametrize("text", ["不可以提他了", "别再提他了", "不要叫我宝宝", "可以叫我小林吧", "我可以去了"])
def test_a_refusal_or_an_ordinary_sentence_lifts_nothing(text: str) -> None:
    assert not [m for m in detect_lifts(text) if m.value in ("提他", "叫我宝宝", "叫我小林")]


def test_a_lifted_taboo_ends_with_the_sentence_that_lifted_it(tmp_path: Path) -> None:
    db = tmp_path / "lift.db"
    conn = fresh_db(db)
    say(conn, "t1", "别再提他了", 1)
    say(conn, "t2", "不要叫我宝宝", 2)
    run(conn)
    say(conn, "t3", "现在可以提他了", 9)
    say(conn, "t4", "可以聊聊天气了", 10)  # a lift of something never forbidden: nothing happens
    report = run(conn, 2.0)
    assert report["relations"]["lifted"] == 1 and report["relations"]["retired"] == 1
    assert report["relations"]["added"] == 0 and report["relations"]["kinds"] == {"taboo_lift": 2}
    every = {r["statement"].partition("：")[2]: r for r in list_relations(conn, include_history=True)}
    assert set(every) == {"别再提他了", "不要叫我宝宝"}  # a lift writes no entry of its own
    lifted, kept = every["别再提他了"], every["不要叫我宝宝"]
    lift_episode, lift_ts = conn.execute(
        "SELECT e.id, e.ts FROM mem_episodic e JOIN chat_message m ON m.id = e.message_id "
        "WHERE m.turn_id = 't3' AND m.role = 'user'").fetchone()
    assert (lifted["status"], lifted["superseded_by"], lifted["valid_to"]) == ("superseded", None, lift_ts)
    assert lifted["ended_by"] == [lift_episode] and kept["status"] == "active" and kept["ended_by"] == []
    assert kinds(list_relations(conn)) == [("taboo", "不要叫我宝宝")]
    assert len(list_relations(conn, as_of=lift_ts - 3600)) == 2  # before the lift both held
    assert run(conn, 3.0)["relations"]["candidates"] == 0  # idempotent
    conn.close()
    result = run_anima("--db", str(db), "facts", "--relations", "--all")
    assert result.code == 0 and "lifted by the user" in result.out, result.err


def test_a_lift_said_before_the_taboo_does_not_end_it(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "order.db")
    say(conn, "t1", "现在可以提他了", 1)
    say(conn, "t2", "别再提他了", 3)
    report = run(conn)
    assert report["relations"]["lifted"] == 0
    assert kinds(list_relations(conn)) == [("taboo", "别再提他了")]


def test_the_validator_checks_lifts() -> None:
    taboo = RelEntry("q1", 1, detect("别再提他了")[0], "2026-08-01 用户说：别再提他了", 10.0)
    nick = RelEntry("q2", 2, detect("叫我小林")[0], "2026-08-01 用户说：叫我小林", 10.0)
    lift = RelCandidate("r1", (5,), detect_lifts("现在可以提他了")[0], "现在可以提他了", 20.0, "2026-08-02", lift=True)
    active = {"q1": taboo, "q2": nick}
    assert rel_rules_plan([lift], active).operations == (Operation("r1", "lifted", ("q1",)),)
    for bad, why in ((Plan((Operation("r1", "lifted", ("q2",)),), "x"), "cannot lift"),
                     (Plan((Operation("r1", "added"),), "x"), "a lift is"),
                     (Plan((Operation("r1", "lifted"),), "x"), "at least one"),
                     (Plan((Operation("r1", "ignored", ("q1",)),), "x"), "no prior")):
        with pytest.raises(PlanRejected, match=why):
            validate_rel_plan(bad, [lift], active, Limits())
    ritual = RelCandidate("r1", (5,), detect("周五一起看电影吧")[0], "周五一起看电影吧", 20.0, "2026-08-02")
    with pytest.raises(PlanRejected, match="not an action for a new entry"):
        validate_rel_plan(Plan((Operation("r1", "lifted", ("q1",)),), "x"), [ritual], active, Limits())


def test_anima_facts_lists_relations_too(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    conn = fresh_db(db)
    say(conn, "t1", "我住在上海徐汇", 1)
    say(conn, "t2", "不要叫我宝宝", 2)
    run(conn)
    conn.close()
    result = run_anima("--db", str(db), "facts", "--json")
    assert result.code == 0, result.err
    body = json.loads(result.out)
    assert "home" in [f["key"] for f in body["facts"]]  # the facts keys are unchanged
    assert [(r["kind"], r["status"]) for r in body["relations"]] == [("taboo", "active")]
    text = run_anima("--db", str(db), "facts", "--relations")
    assert text.code == 0 and "[taboo]" in text.out and "徐汇" not in text.out
