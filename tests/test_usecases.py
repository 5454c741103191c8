"""The request use cases: one transaction each, shared by the API and the CLI; routes only parse, call and shape."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from engine import inner
from engine.memory.ingest import TurnInput
from engine.persona import Persona
from engine.settings import Settings
from engine.store import connect
from engine.store import life as life_store
from engine.store.core import get_companion, read_switches, set_control
from engine.usecases import context as context_case
from engine.usecases.share import tell_life_event
from engine.usecases.state import read_state
from engine.usecases.turns import record_turn
from tests.api_support import T0, HashEmbedder, make_database

REPO = Path(__file__).resolve().parents[1]
ROUTES = sorted((REPO / "daemon" / "api" / "routes").glob("*.py"))
S = Settings()


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    make_database(tmp_path / "anima.db")
    c = connect(tmp_path / "anima.db")
    inner.resume_after_gap(c, S, _persona(c), None, T0)
    yield c
    c.close()


def _persona(conn: Any) -> Persona:
    return Persona.from_dict(get_companion(conn)["persona"])


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _turn(turn_id: str, user: str = "我养了一只猫，叫年糕", companion: str = "年糕这个名字好可爱") -> TurnInput:
    return TurnInput(turn_id=turn_id, user=user, companion=companion, ts_iso="2026-05-28T20:00:00+08:00")


# --- where the work lives ------------------------------------------------------------------------


def _imports_and_calls(path: Path) -> tuple[set[str], set[str], set[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    keywords = {k.arg or "" for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords}
    return modules, names, keywords


@pytest.mark.parametrize("path", ROUTES, ids=lambda p: p.name)
def test_a_route_opens_no_transaction_and_touches_no_store(path: Path) -> None:
    modules, names, _ = _imports_and_calls(path)
    assert not {m for m in modules if m == "engine.store" or m.startswith("engine.store.")}, path.name
    assert not names & {"transaction", "q"}, path.name


def test_the_engine_calls_back_into_no_route() -> None:
    """record_turn's on_recorded hook was the engine calling the route's code inside its transaction."""
    for path in [*ROUTES, *(REPO / "engine" / "usecases").glob("*.py"), *(REPO / "daemon" / "cli").glob("*.py")]:
        assert "on_recorded" not in _imports_and_calls(path)[2], path.name


# --- record a turn -------------------------------------------------------------------------------


def test_a_turn_is_one_transaction_a_failing_step_leaves_nothing(conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    before = (_count(conn, "chat_message"), _count(conn, "mem_episodic"), life_store.get_inner_state(conn))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("interrupt failed")

    monkeypatch.setattr(inner, "interrupt_for_chat", broken)  # after the messages and the appraisal
    with pytest.raises(RuntimeError):
        record_turn(conn, S, _persona(conn), HashEmbedder(), _turn("t1"), T0 + 60)
    assert not conn.in_transaction
    assert (_count(conn, "chat_message"), _count(conn, "mem_episodic"), life_store.get_inner_state(conn)) == before


def test_a_replayed_turn_moves_her_once_and_its_switches_decide(conn: Any) -> None:
    persona = _persona(conn)
    first = record_turn(conn, S, persona, HashEmbedder(), _turn("t1"), T0 + 60)
    again = record_turn(conn, S, persona, HashEmbedder(), _turn("t1"), T0 + 61)
    assert first.created and first.interrupted and len(first.memory_ids) == 2
    assert not again.created and not again.interrupted and again.message_ids == first.message_ids
    set_control(conn, "life", False, T0)
    off = record_turn(conn, S, persona, HashEmbedder(), _turn("t2", "今天下雨了", "记得带伞"), T0 + 120)
    assert off.created and not off.interrupted


# --- context and recall --------------------------------------------------------------------------


def test_cli_recall_and_api_context_run_the_same_recall(conn: Any) -> None:
    persona, embedder = _persona(conn), HashEmbedder()
    record_turn(conn, S, persona, embedder, _turn("t1"), T0 + 60)
    record_turn(conn, S, persona, embedder, _turn("t2", "周末去爬山了", "累不累呀"), T0 + 120)
    query = "我的猫叫什么"
    cli = context_case.recall_for(conn, embedder, query, S, read_switches(conn), T0 + 200)
    built = context_case.build_context(conn, S, persona, embedder, query, None, "t3", None, T0 + 200)
    assert cli.hits and [h.to_json() for h in built.result.hits] == [h.to_json() for h in cli.hits]
    assert built.injection_id is not None and built.result.context == cli.context


def test_context_with_memory_search_off_has_no_block_and_records_nothing(conn: Any) -> None:
    persona, embedder = _persona(conn), HashEmbedder()
    record_turn(conn, S, persona, embedder, _turn("t1"), T0 + 60)
    set_control(conn, "memory_search", False, T0)
    injections = _count(conn, "context_injection")
    built = context_case.build_context(conn, S, persona, embedder, "我的猫叫什么", None, "t3", None, T0 + 200)
    assert built.result.context == "" and built.injection_id is None and built.relationship == []
    assert _count(conn, "context_injection") == injections


# --- telling and state ---------------------------------------------------------------------------


def test_telling_a_life_event_marks_it_once_and_indexes_it_once(conn: Any) -> None:
    event_id = life_store.add_life_event(conn, "下午在阳台给绿萝换了盆", T0 - 600, told=False, origin="life",
                                         kind="completed")
    memory_id = tell_life_event(conn, HashEmbedder(), event_id, "t9", T0)
    row = life_store.get_life_event(conn, event_id)
    assert row["told"] == 1 and row["told_turn_id"] == "t9" and row["told_at"] == T0
    assert tell_life_event(conn, HashEmbedder(), event_id, "t10", T0 + 5) == memory_id  # again: nothing changes
    assert life_store.get_life_event(conn, event_id)["told_turn_id"] == "t9"
    assert conn.execute("SELECT count(*) FROM mem_episodic WHERE life_event_id = ?", (event_id,)).fetchone()[0] == 1


def test_read_state_gives_typed_switches_and_counts(conn: Any) -> None:
    record_turn(conn, S, _persona(conn), HashEmbedder(), _turn("t1"), T0 + 60)
    set_control(conn, "sharing", False, T0)
    state = read_state(conn, S, _persona(conn), T0 + 61)
    assert state.switches.sharing is False and state.switches.mood_step is True
    assert state.counts["chat_messages"] == 2 and state.counts["chat_turns"] == 1
    assert set(state.snapshot) == {"mood", "energy", "activity"}
