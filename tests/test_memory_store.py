"""The accessors that took over q() from engine/memory keep the contracts their callers rely on: forget puts
back the connection's secure_delete whatever it was, a block confirms one use only, an open-ended range
is every turn, and a lineage's successor is never one of the facts being forgotten."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.memory.ingest import TurnInput, record_turn
from engine.store import connect, transaction
from engine.store import facts as fact_store
from engine.store import forget as forget_store
from engine.store import memory as memory_store
from tests.api_support import T0, HashEmbedder, make_database


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    path = tmp_path / "her.db"
    make_database(path, T0)
    connection = connect(path)
    yield connection
    connection.close()


def _turn(conn: Any, turn_id: str, ts_iso: str, user: str) -> list[int]:
    turn = TurnInput(turn_id=turn_id, user=user, companion="嗯嗯", ts_iso=ts_iso)
    return record_turn(conn, HashEmbedder(), turn, T0, embed=False).memory_ids


@pytest.mark.parametrize(("setting", "previous"), [("OFF", 0), ("ON", 1), ("FAST", 2)])
def test_forget_restores_each_secure_delete_setting(conn: Any, setting: str, previous: int) -> None:
    conn.execute(f"PRAGMA secure_delete = {setting}")
    assert forget_store.secure_delete_state(conn) == previous
    forget_store.secure_delete_on(conn)
    assert forget_store.secure_delete_state(conn) == 1
    forget_store.restore_secure_delete(conn, previous)
    assert forget_store.secure_delete_state(conn) == previous


def test_a_block_is_marked_used_once_and_gives_its_memory_ids(conn: Any) -> None:
    ids = _turn(conn, "t-1", "2026-05-28T10:00:00+08:00", "我养了一只猫")
    with transaction(conn):
        memory_store.insert_injection(conn, injection_id="inj_a", ts=T0, turn_id="t-2", query_hash="q",
                                      block_hash="b", block_text="相关记忆", memory_ids=ids, fact_ids=[])
        assert memory_store.mark_injection_used(conn, "inj_a", "t-2", T0 + 1) == ids
        assert memory_store.mark_injection_used(conn, "inj_a", "t-3", T0 + 2) is None
    assert memory_store.injection(conn, "inj_a")["used_turn_id"] == "t-2"
    assert memory_store.injection_used_by_turn(conn, "t-2")["id"] == "inj_a"


def test_open_ended_turn_ranges_reach_every_turn(conn: Any) -> None:
    _turn(conn, "t-old", "2026-01-01T10:00:00+08:00", "一月的事")
    _turn(conn, "t-new", "2026-05-01T10:00:00+08:00", "五月的事")
    may = 1_777_564_800.0  # 2026-04-30 16:00 UTC
    assert forget_store.turn_ids_between(conn, None, None) == ["t-new", "t-old"] == forget_store.all_turn_ids(conn)
    assert forget_store.turn_ids_between(conn, may, None) == ["t-new"]
    assert forget_store.turn_ids_between(conn, None, may) == ["t-old"]


def test_the_successor_of_a_lineage_excludes_the_facts_being_forgotten(conn: Any) -> None:
    evidence = _turn(conn, "t-1", "2026-05-28T10:00:00+08:00", "我住在杭州")
    with transaction(conn):
        older, newer = (fact_store.insert_fact(conn, subject="user", key="home", statement=s, valid_from=T0 + i,
                                               recorded_at=T0 + i, evidence=evidence, importance=0.5,
                                               origin="consolidation")
                        for i, s in enumerate(["住在杭州", "住在上海"]))
    assert forget_store.active_fact_of_key(conn, "home", []) == newer
    assert forget_store.active_fact_of_key(conn, "home", [newer]) == older
    assert forget_store.active_fact_of_key(conn, "home", [newer, older]) is None
