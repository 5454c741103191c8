"""Ingest: one transaction per turn, idempotent by (turn_id, role), user-only turns, bad input refused, anti-loop."""

from dataclasses import replace

import pytest

from engine.errors import ConflictError, InputError, StoreError
from engine.memory.context import HEADER, record_injection
from engine.memory.ingest import TurnInput, index_life_event, record_turn, record_turns_bulk
from engine.memory.recall import recall
from tests.memory_helpers import ON, SETTINGS, add_life_event, embedder, fresh_db

NOW = 1796083200.0


@pytest.fixture
def conn(tmp_path):
    return fresh_db(tmp_path / "anima.db")


def count(conn, table):
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_turn_writes_messages_memories_fts_and_vectors(conn):
    result = record_turn(conn, embedder(), TurnInput("t1", "我养了一只猫叫团子", "团子这个名字好软。",
                                                     "2026-06-01T22:00:00+08:00"), NOW)
    assert result.created and len(result.memory_ids) == 2 and len(result.message_ids) == 2
    for table in ("chat_message", "mem_episodic", "mem_fts", "mem_vec"):
        assert count(conn, table) == 2
    assert conn.execute("SELECT name, dim FROM embedding_model").fetchone()[1] == 384


def test_same_turn_twice_is_idempotent(conn):
    turn = TurnInput("t1", "我养了一只猫叫团子", None, "2026-06-01T22:00:00+08:00")
    record_turn(conn, embedder(), turn, NOW)
    again = record_turn(conn, embedder(), turn, NOW)
    assert not again.created and count(conn, "mem_episodic") == 1


def test_different_text_for_a_recorded_message_conflicts(conn):
    record_turn(conn, embedder(), TurnInput("t1", "a", None, "2026-06-01T22:00:00+08:00"), NOW)
    with pytest.raises(ConflictError):
        record_turn(conn, embedder(), TurnInput("t1", "b", None, "2026-06-01T22:00:00+08:00"), NOW)


def test_user_only_turn_is_accepted(conn):
    result = record_turn(conn, embedder(), TurnInput("u1", "I moved to Lisbon last spring.", None,
                                                     "2026-06-01T10:00:00Z"), NOW)
    assert len(result.memory_ids) == 1
    hits = recall(conn, embedder(), "where do I live now", settings=SETTINGS, switches=ON, now=NOW).hits
    assert hits and hits[0].turn_id == "u1"


@pytest.mark.parametrize("turn", [
    TurnInput("", "x", None, "2026-06-01T10:00:00Z"),
    TurnInput("t", None, None, "2026-06-01T10:00:00Z"),
    TurnInput("t", "  ", "", "2026-06-01T10:00:00Z"),
    TurnInput("t", "x", None, "yesterday"),
    TurnInput("t", "x" * 9000, None, "2026-06-01T10:00:00Z"),
    TurnInput("t", "x", None, "2026-06-01T10:00:00Z", salience=3),
])
def test_bad_turns_are_refused_and_nothing_written(conn, turn):
    with pytest.raises(InputError):
        record_turn(conn, embedder(), turn, NOW)
    assert count(conn, "chat_message") == 0 and count(conn, "mem_episodic") == 0


def test_on_recorded_runs_inside_the_transaction_and_rolls_back_with_it(conn):
    def boom(c):
        assert c.execute("SELECT count(*) FROM chat_message").fetchone()[0] == 1
        raise RuntimeError("appraisal failed")

    with pytest.raises(RuntimeError):
        record_turn(conn, embedder(), TurnInput("t1", "x", None, "2026-06-01T10:00:00Z"), NOW, on_recorded=boom)
    assert count(conn, "chat_message") == 0 and count(conn, "mem_vec") == 0


def test_an_imported_history_holding_our_own_block_is_marked_like_a_live_turn(conn):
    """The bulk path (anima ingest) applies the same anti-loop rule as a live turn."""
    record_turns_bulk(conn, embedder(), [
        TurnInput("h1", "今天在旧书店淘到一本蓝色封面的诗集", "真好", "2026-06-01T10:00:00+08:00"),
        TurnInput("h2", f"{HEADER}\n[2026-06-01 · h1] 用户：今天在旧书店淘到一本蓝色封面的诗集", "嗯",
                  "2026-06-02T10:00:00+08:00"),
    ], NOW)
    rows = conn.execute("SELECT turn_id, role, echo_of_injection FROM mem_episodic ORDER BY id").fetchall()
    assert [(r["turn_id"], r["role"], r["echo_of_injection"]) for r in rows] == [
        ("h1", "user", None), ("h1", "companion", None), ("h2", "user", "pasted_block"), ("h2", "companion", None)]
    hits = recall(conn, embedder(), "蓝色封面的诗集", settings=SETTINGS, switches=ON, now=NOW, k=10).hits
    assert hits[0].turn_id == "h1"
    assert ("h2", "user") not in {(h.turn_id, h.role) for h in hits}  # the pasted block itself never comes back


def test_reply_echoing_an_injected_block_is_marked_and_never_recalled(conn):
    record_turn(conn, embedder(), TurnInput("t1", "今天在旧书店淘到一本蓝色封面的诗集，纸页有点受潮的味道", None,
                                            "2026-06-01T10:00:00+08:00"), NOW)
    result = recall(conn, embedder(), "旧书店", settings=SETTINGS, switches=ON, now=NOW)
    injection = record_injection(conn, result, "t9", NOW)
    stored = conn.execute("SELECT memory_ids_json, block_chars FROM context_injection WHERE id = ?", (injection,)).fetchone()
    assert stored[1] == len(result.context) and "1" in stored[0]
    echo = record_turn(conn, embedder(), TurnInput("t9", "还记得那本书吗", "你说过在旧书店淘到一本蓝色封面的诗集呀",
                                                   "2026-06-09T10:00:00+08:00"), NOW + 10)
    rows = conn.execute("SELECT role, echo_of_injection FROM mem_episodic WHERE turn_id='t9'").fetchall()
    assert {r["role"]: r["echo_of_injection"] for r in rows} == {"user": None, "companion": injection}
    hits = recall(conn, embedder(), "蓝色封面的诗集", settings=SETTINGS, switches=ON, now=NOW + 20, k=10).hits
    assert echo.memory_ids[1] not in [h.memory_id for h in hits]
    assert count(conn, "mem_episodic") == 3  # the block itself never became a memory


def test_life_events_index_only_when_told(conn):
    untold = add_life_event(conn, "她在阳台给薄荷换盆", NOW - 100, told=0)
    with pytest.raises(InputError):
        index_life_event(conn, embedder(), untold, NOW)
    assert count(conn, "mem_episodic") == 0
    told = add_life_event(conn, "她去海边捡了贝壳", NOW - 100, told=1)
    memory_id = index_life_event(conn, embedder(), told, NOW)
    assert index_life_event(conn, embedder(), told, NOW) == memory_id
    hits = recall(conn, embedder(), "贝壳", settings=SETTINGS, switches=ON, now=NOW).hits
    assert hits[0].source == "self_life"


def test_another_embedding_model_is_refused(conn):
    record_turn(conn, embedder(), TurnInput("t1", "x", None, "2026-06-01T10:00:00Z"), NOW)
    conn.execute("UPDATE embedding_model SET name = 'other-model'")
    with pytest.raises(StoreError, match="anima reembed"):
        recall(conn, embedder(), "x", settings=SETTINGS, switches=ON, now=NOW)
    with pytest.raises(StoreError, match="anima reembed"):
        record_turn(conn, embedder(), TurnInput("t2", "y", None, "2026-06-01T10:00:00Z"), NOW)
    from engine.memory.reembed import reembed

    assert reembed(conn, embedder(), NOW).memories == 1
    assert recall(conn, embedder(), "x", settings=SETTINGS, switches=ON, now=NOW).mode == "hybrid"


@pytest.mark.parametrize("query", ["", "   ", "字" * 100_000])
def test_bad_queries_are_input_errors(conn, query):
    with pytest.raises(InputError):
        recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=NOW)


def test_in_process_index_finds_the_same_neighbours_as_sqlite_vec(conn):
    from dataclasses import replace

    texts = ["我养了一只猫叫团子", "周末去爬了香山", "最近在学做寿司", "我对海鲜过敏", "弟弟明年高考", "我住在上海徐汇"]
    for i, text in enumerate(texts):
        record_turn(conn, embedder(), TurnInput(f"b{i}", text, None, "2026-06-01T10:00:00+08:00"), NOW)
    exact = recall(conn, embedder(), "我的宠物", settings=SETTINGS, switches=ON, now=NOW)
    binary = recall(conn, embedder(), "我的宠物", settings=replace(SETTINGS, ram_index_from=0), switches=ON,
                    now=NOW)
    assert [h.memory_id for h in binary.hits] == [h.memory_id for h in exact.hits]
    assert binary.hits[0].turn_id == "b0"
    record_turn(conn, embedder(), TurnInput("b9", "我的小狗叫豆豆", None, "2026-06-02T10:00:00+08:00"), NOW)
    grown = recall(conn, embedder(), "我的小狗叫什么", settings=replace(SETTINGS, ram_index_from=0), switches=ON,
                   now=NOW)
    assert grown.hits[0].turn_id == "b9"  # rows added after the index was built are found


async def test_memory_component_publishes_a_warm_embedder(tmp_path):
    import structlog

    from daemon.clock import FakeClock
    from daemon.component import DaemonContext
    from daemon.db import AsyncStore
    from daemon.memory_component import build
    from engine.settings import Settings

    fresh_db(tmp_path / "a.db").close()
    store = await AsyncStore(tmp_path / "a.db").open()
    ctx = DaemonContext(settings=Settings(), db_path=tmp_path / "a.db", clock=FakeClock(NOW), store=store,
                        log=structlog.get_logger())
    component = build(ctx)
    await component.start(ctx)
    assert ctx.embedder.embed_queries(["你好"]).shape == (1, 384)
    assert ctx.vector_indexer is not None
    await component.stop(ctx)
    assert ctx.embedder is None and ctx.vector_indexer is None
    await store.close()


def test_fact_hits_join_the_block_and_are_recorded_as_facts(conn):
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Fact:
        fact_id: int = 77
        text: str = "2026-06-16 用户住在上海徐汇"
        score: float = 9.0
        source: str = "fact"
        ts: str = "2026-06-16"
        turn_id: str | None = "d06"
        evidence_turn_ids: tuple[str, ...] = ("d06",)

        def to_json(self):
            return {"source": "fact", "fact_id": self.fact_id, "text": self.text}

    record_turn(conn, embedder(), TurnInput("t1", "我搬到了闵行", None, "2026-07-22T22:00:00+08:00"), NOW)
    result = recall(conn, embedder(), "我住哪", settings=SETTINGS, switches=replace(ON, memory_facts=True), now=NOW,
                    extra_sources=[lambda *a, **kw: [Fact()]])
    assert result.hits[0].source == "fact" and "[2026-06-16 · 事实]" in result.context
    assert result.fact_ids == [77] and 77 not in result.context_memory_ids
    off = recall(conn, embedder(), "我住哪", settings=SETTINGS, switches=replace(ON, memory_facts=False), now=NOW,
                 extra_sources=[lambda *a, **kw: [Fact()]])
    assert all(h.source != "fact" for h in off.hits)
