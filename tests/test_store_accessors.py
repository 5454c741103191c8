"""The engine/store accessors that took over q() from consolidation, snapshot, privacy and doctor keep their
contracts: a write that finds its row gone or closed says so, as-of reads honour valid time, the privacy
reads see exactly the untold set, and doctor reports the wall-clock steps recorded since the last start."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon.cli import main
from engine.memory.ingest import TurnInput, record_turn
from engine.store import connect, ops, transaction
from engine.store import facts as fact_store
from engine.store import life as life_store
from engine.store import relations as relation_store
from engine.store import share as share_store
from engine.store.core import log_event
from tests.api_support import T0, HashEmbedder, make_database

DAY = 86400.0


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "her.db"
    make_database(path, T0)
    return path


@pytest.fixture
def conn(db: Path) -> Iterator[Any]:
    connection = connect(db)
    yield connection
    connection.close()


def _turn(conn: Any, user: str, companion: str = "嗯嗯") -> list[int]:
    """One recorded turn (no vectors); its two memory ids, the evidence a fact or entry may rest on."""
    turn = TurnInput(turn_id="t-" + hashlib.sha1(user.encode()).hexdigest()[:8], user=user, companion=companion, ts_iso="2026-05-28T10:00:00+08:00")
    return record_turn(conn, HashEmbedder(), turn, T0, embed=False).memory_ids


def _fact(conn: Any, valid_from: float, statement: str = "2026-01-01 I live in Hangzhou") -> int:
    evidence = _turn(conn, statement)
    return fact_store.insert_fact(conn, subject="user", key="home", statement=statement, valid_from=valid_from,
                                  recorded_at=valid_from, evidence=evidence[::-1], importance=0.5,
                                  origin="consolidation")


def test_a_retired_fact_refuses_merge_and_retire_and_counts_as_history(conn: Any) -> None:
    with transaction(conn):
        old, new = _fact(conn, T0), _fact(conn, T0 + DAY, "2026-01-02 I moved to Ningbo")
        assert fact_store.fact_evidence(conn, old) == [2, 1]
        assert fact_store.retire_fact(conn, old, T0 + DAY, superseded_by=new) is True
    assert fact_store.retire_fact(conn, old, T0 + 2 * DAY, superseded_by=new) is False
    assert fact_store.merge_into_fact(conn, old, [1, 2, 3], 0.9) is False
    assert fact_store.merge_into_fact(conn, new, [1, 2, 3], 0.9) is True
    assert fact_store.fact_evidence(conn, new) == [1, 2, 3]
    assert fact_store.fact_evidence(conn, 999) is None
    assert fact_store.active_fact_ids(conn) == [new]
    assert fact_store.fact_counts(conn) == (2, 1)
    assert [r["id"] for r in fact_store.facts_as_of(conn, T0 + DAY / 2)] == [old]
    assert [r["id"] for r in fact_store.all_facts(conn)] == [old, new]
    assert set(fact_store.facts_by_ids(conn, [new, 999])) == {new}


def test_the_facts_fingerprint_moves_on_a_new_vector_and_on_a_closed_fact(conn: Any) -> None:
    before = fact_store.facts_fingerprint(conn)
    fact_id = _fact(conn, T0)
    added = fact_store.facts_fingerprint(conn)
    fact_store.write_fact_vector(conn, fact_id, "test-model", b"\x00" * 16)
    vectored = fact_store.facts_fingerprint(conn)
    fact_store.close_new_fact(conn, fact_id, T0 + DAY, superseded_by=fact_id)
    closed = fact_store.facts_fingerprint(conn)
    assert len({before, added, vectored, closed}) == 4
    assert [(r["id"], len(r["embedding"])) for r in fact_store.fact_vectors(conn)] == [(fact_id, 16)]


def test_a_lifted_relation_keeps_its_ending_evidence_and_refuses_a_merge(conn: Any) -> None:
    stated, lifted = _turn(conn, "以后别提他"), _turn(conn, "现在可以提他了")
    rel = relation_store.insert_relation(conn, kind="taboo", statement="2026-01-01 以后别提他", valid_from=T0,
                                         recorded_at=T0, evidence=stated[:1])
    assert relation_store.active_relation_ids(conn) == [rel]
    assert relation_store.relations_for_reply(conn, 12)[0]["kind"] == "taboo"
    assert relation_store.retire_relation(conn, rel, T0 + DAY, superseded_by=None, ended_by=lifted[:1]) is True
    assert relation_store.retire_relation(conn, rel, T0 + DAY, superseded_by=None, ended_by=lifted[:1]) is False
    assert relation_store.merge_into_relation(conn, rel, stated) is False
    row = relation_store.all_relations(conn)[0]
    assert json.loads(row["ended_evidence_json"]) == lifted[:1] and row["status"] == "superseded"
    assert relation_store.active_relations(conn) == [] and relation_store.relations_for_reply(conn, 12) == []
    assert [r["id"] for r in relation_store.relations_as_of(conn, T0 + DAY / 2)] == [rel]
    assert relation_store.relation_evidence(conn, 999) is None


def test_the_privacy_reads_see_exactly_the_untold_set(conn: Any) -> None:
    empty = share_store.untold_fingerprint(conn)
    told = life_store.add_life_event(conn, "在西湖边喂了鸽子", T0, told=True)
    assert share_store.untold_fingerprint(conn) == empty
    untold = life_store.add_life_event(conn, "偷偷给自己买了一束花", T0 + 60)
    assert share_store.untold_fingerprint(conn) != empty
    assert share_store.untold_texts(conn) == [(untold, "偷偷给自己买了一束花")]
    assert told != untold and share_store.said_in_chat(conn, untold, 16) is False
    _turn(conn, "今天怎么样", "偷偷给自己买了一束花，嘿嘿")  # she said it in a reply: not secret any more
    assert share_store.said_in_chat(conn, untold, 16) is True


def test_doctor_reports_the_clock_steps_recorded_since_the_last_start(db: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    conn = connect(db)
    with transaction(conn):
        log_event(conn, T0, "clock_stepped", step_s=-300.0)  # before the last start: not this run's
        log_event(conn, T0 + 1, "start", pid=1)
        log_event(conn, T0 + 2, "clock_backwards", seconds=120.0, at="start")
        log_event(conn, T0 + 3, "clock_stepped", step_s=DAY)
    assert [(s["kind"], s["detail"]) for s in ops.clock_steps_since(conn, 0)][1:] == [
        ("clock_backwards", {"seconds": 120.0, "at": "start"}), ("clock_stepped", {"step_s": DAY})]
    conn.close()
    capsys.readouterr()
    main(["--db", str(db), "doctor", "--json"])
    clock = {c["check"]: c for c in json.loads(capsys.readouterr().out)["checks"]}["clock"]
    assert clock["status"] == "warn" and "2 wall-clock step(s) since the last start (s: -120, +86400)" in clock["detail"]


def test_rows_by_key_orders_by_the_primary_key_not_by_insertion(conn: Any) -> None:
    conn.execute("CREATE TABLE pair (b TEXT, a INTEGER, PRIMARY KEY (a, b)) WITHOUT ROWID")
    conn.executemany("INSERT INTO pair VALUES (?, ?)", [("y", 2), ("x", 2), ("z", 1)])
    assert [tuple(r) for r in ops.rows_by_key(conn, "pair")] == [("z", 1), ("x", 2), ("y", 2)]
    assert "pair" in ops.ordinary_tables(conn) and ops.integrity_problems(conn) == ["ok"]
