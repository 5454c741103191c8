"""Forget (acceptance 4): a forgotten turn leaves no byte in the file, its WAL or an export, and nothing returns it.

Real parts: a real SQLite file, the bundled e5 model (vectors indexed), a real consolidation pass that
makes a fact from the turn, recall with facts and an injection record that quoted it, and the real
`anima` CLI in a subprocess. Every other deletion stays refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine import jobs
from engine.consolidate import facts_recall
from engine.consolidate.facts_recall import fact_hits, list_facts
from engine.consolidate.relational import list_relations
from engine.consolidate.run import consolidate_once
from engine.control import Switches
from engine.errors import InputError, NotFoundError
from engine.memory import forget as forgetting
from engine.memory import vector_index
from engine.memory.context import record_injection
from engine.memory.ingest import TurnInput, record_turn
from engine.memory.recall import recall
from engine.settings import Settings
from engine.snapshot import table_digests
from engine.store import connect
from engine.store.core import events, read_switches
from engine.store.queries import q
from tests.conftest import run_anima
from tests.memory_helpers import SETTINGS, add_life_event, embedder, fresh_db

ASCII = "QZXCANARY7731"
ZH = "紫藤花巷的秘密小屋"
CANARY_USER = f"我搬到了闵行{ASCII}，住在{ZH}"
CANARY_REPLY = f"闵行的{ZH}听起来好温馨"
# Everything the canary turn could leave behind: the words, the lower-cased FTS term, every CJK bigram.
NEEDLES = [ASCII, ASCII.lower(), ZH, *{ZH[i:i + 2] for i in range(len(ZH) - 1)}]
FACTS_ON = Switches.defaults()  # recall with facts joining


def say(conn: Any, turn: str, user: str, day: int, reply: str = "嗯。") -> None:
    record_turn(conn, embedder(), TurnInput(turn, user, reply, f"2026-07-{day:02d}T22:00:00+08:00"), 0)


def consolidate(conn: Any, now: float = 1.0) -> dict[str, Any]:
    return consolidate_once(conn, embedder(), Settings(), read_switches(conn), now)


def ask(conn: Any, query: str, now: float = 2_000_000_000.0) -> Any:
    return recall(conn, embedder(), query, settings=SETTINGS, switches=FACTS_ON, now=now, budget=600,
                  extra_sources=(fact_hits,))


def build_history(db: Path) -> dict[str, Any]:
    """Home in 徐汇, then the canary turn (moved to 闵行: a fact superseding home), then an unrelated turn;
    consolidated, recalled into an injection record, named by a share offer and held in a job's payload."""
    conn = fresh_db(db)
    say(conn, "t-home", "我住在上海徐汇，窗外能看到一棵很老的梧桐", 20, "好的。")
    say(conn, "t-canary", CANARY_USER, 22, CANARY_REPLY)
    say(conn, "t-noodle", "今天吃了一碗热汤面", 23, "热汤面最治愈了")
    report = consolidate(conn)
    assert report["superseded"] == 1, report
    statements = [f["statement"] for f in list_facts(conn, include_history=True)]
    assert any(ASCII in s for s in statements), statements  # the fact was made from the canary turn
    result = ask(conn, "我现在住在哪里？")
    assert ASCII in result.context  # recall (with facts) returns it before the forget
    record_injection(conn, result, "t-after", 3.0)
    life_id = add_life_event(conn, "下午在湖边看白鹭", 10.0, told=0)
    conn.execute(q("insert_offer"), {"id": "sh_test", "life_event_id": life_id, "turn_id": "t-canary",
                                     "now": 10.0, "expires_at": 99.0})
    jobs.enqueue(conn, "note", {"quoted": CANARY_USER}, 4.0)
    canary_memories = [r[0] for r in conn.execute(
        "SELECT e.id FROM mem_episodic e JOIN chat_message m ON m.id = e.message_id WHERE m.turn_id = 't-canary'")]
    vectors = [conn.execute("SELECT embedding FROM mem_embedding WHERE id = ?", (i,)).fetchone()[0]
               for i in canary_memories]
    assert len(vectors) == 2  # vectors were indexed
    conn.close()
    return {"memory_ids": canary_memories, "vectors": vectors}


def leaked(path: Path, extra: Sequence[bytes] = ()) -> list[str]:
    if not path.exists():
        return []
    data = path.read_bytes()
    found = [n for n in NEEDLES if n.encode("utf-8") in data]
    return found + [f"vector#{i}" for i, blob in enumerate(extra) if blob in data]


def test_forgotten_canary_leaves_no_byte_in_db_wal_or_export_and_nothing_returns_it(tmp_path: Path) -> None:
    db = tmp_path / "anima.db"
    built = build_history(db)
    assert leaked(db) or leaked(Path(f"{db}-wal"))  # the needles do find the canary before

    done = run_anima("--db", str(db), "forget", "--turn", "t-canary", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["turn_ids"] == ["t-canary"] and report["messages"] == 2 and report["memories"] == 2
    assert report["facts_deleted"] == 1 and report["facts_reopened"] == 1 and report["injections"] == 1
    assert report["share_offers"] == 1 and report["jobs_scrubbed"] == 1 and report["wal_truncated"] is True
    assert "memory.forgotten" in done.err and ASCII not in done.err and ZH not in done.err

    export = tmp_path / "export.db"
    exported = run_anima("--db", str(db), "export", str(export))
    assert exported.code == 0, exported.err
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), export):
        assert leaked(path, built["vectors"]) == [], path

    conn = connect(db)
    # recall, context and facts no longer return it; the home it had superseded is true again
    result = ask(conn, "我现在住在哪里？")
    assert ASCII not in result.context and ZH not in result.context
    assert not [h for h in result.hits if ASCII in h.text]
    assert not [f for f in list_facts(conn, include_history=True) if ASCII in f["statement"]]
    (home,) = [f for f in list_facts(conn) if f["key"] == "home"]
    assert "徐汇" in home["statement"] and home["valid_to"] is None and home["superseded_by"] is None
    assert conn.execute("SELECT count(*) FROM chat_message WHERE turn_id = 't-canary'").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM share_offer").fetchone()[0] == 0
    assert json.loads(conn.execute("SELECT payload_json FROM job WHERE kind = 'note'").fetchone()[0]) == {}
    for memory_id in built["memory_ids"]:
        assert conn.execute("SELECT count(*) FROM mem_vec WHERE rowid = ?", (memory_id,)).fetchone()[0] == 0
    # the other turns are untouched, and the event says what happened in ids and counts
    assert conn.execute("SELECT count(DISTINCT turn_id) FROM chat_message").fetchone()[0] == 2
    (event,) = events(conn, "forget")
    assert event["detail"]["turn_ids"] == ["t-canary"] and event["detail"]["actor"] == "cli"
    assert ASCII not in event["detail_json"] and ZH not in event["detail_json"]
    assert conn.execute("SELECT count(*) FROM forget_in_progress").fetchone()[0] == 0
    conn.close()


@pytest.mark.parametrize("statement", [
    "DELETE FROM chat_message", "DELETE FROM mem_episodic", "DELETE FROM mem_semantic",
    "DELETE FROM mem_relational", "DELETE FROM event_log",
])
def test_every_other_deletion_is_still_refused(tmp_path: Path, statement: str) -> None:
    conn = fresh_db(tmp_path / "refuse.db")
    say(conn, "t1", "别再提他了", 1)
    say(conn, "t2", "我住在闵行", 2)
    consolidate(conn)
    conn.execute("INSERT INTO event_log (ts, kind) VALUES (1, 'start')")
    table = statement.rsplit(" ", 1)[1]
    before = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    assert before > 0
    with pytest.raises(Exception, match="never deleted|append-only|supersede"):
        conn.execute(statement)
    forgetting.forget(conn, forgetting.selection(turn_id="t2"), 5.0)  # the exception closes behind itself
    with pytest.raises(Exception, match="never deleted|append-only|supersede"):
        conn.execute(statement)


def test_unknown_turn_is_not_found_and_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "unknown.db"
    conn = fresh_db(db)
    say(conn, "t1", "我住在闵行", 2)
    before = table_digests(conn)
    with pytest.raises(NotFoundError, match="no turn 'nope'"):
        forgetting.forget(conn, forgetting.selection(turn_id="nope"), 5.0)
    assert table_digests(conn) == before
    conn.close()
    result = run_anima("--db", str(db), "forget", "--turn", "nope")
    assert result.code == 2 and "anima: no turn 'nope'" in result.err and "Traceback" not in result.err


def test_forgetting_twice_is_idempotent(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "twice.db")
    say(conn, "t1", "我住在闵行", 2)
    say(conn, "t2", "今天吃了一碗热汤面", 3)
    first = forgetting.forget(conn, forgetting.selection(turn_id="t1"), 5.0)
    assert first.messages == 2 and not first.already_forgotten
    before = table_digests(conn)
    again = forgetting.forget(conn, forgetting.selection(turn_id="t1"), 6.0)
    assert again.already_forgotten and again.messages == 0 and again.turn_ids == ()
    assert table_digests(conn) == before  # no second event, nothing touched


def test_a_fact_with_other_evidence_is_rewritten_from_it(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "merge.db")
    say(conn, "t0", f"我住在闵行{ASCII}", 22)
    consolidate(conn)
    say(conn, "t1", f"对，我住在闵行{ASCII}", 23)
    assert consolidate(conn, 2.0)["merged"] == 1
    (fact,) = list_facts(conn)
    assert fact["statement"].startswith("2026-07-22") and len(fact["evidence"]) == 2
    report = forgetting.forget(conn, forgetting.selection(turn_id="t0"), 5.0)
    assert (report.facts_deleted, report.facts_rewritten) == (0, 1)
    (kept,) = list_facts(conn, include_history=True)
    t1_memory = conn.execute("SELECT e.id FROM mem_episodic e JOIN chat_message m ON m.id = e.message_id "
                             "WHERE m.turn_id = 't1' AND m.role = 'user'").fetchone()[0]
    assert kept["id"] == fact["id"] and kept["evidence"] == [t1_memory]
    assert kept["statement"] == f"2026-07-23 用户说：对，我住在闵行{ASCII}"  # the host's words, from what remains
    fact_vec = conn.execute("SELECT embedding FROM mem_semantic_vec WHERE fact_id = ?", (kept["id"],)).fetchone()[0]
    assert fact_vec == conn.execute("SELECT embedding FROM mem_embedding WHERE id = ?", (t1_memory,)).fetchone()[0]


def test_a_taboo_lifted_only_by_the_forgotten_turn_holds_again_and_one_only_it_said_goes(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "lift.db")
    say(conn, "t1", "别再提他了", 1)
    say(conn, "t2", "不要叫我宝宝", 2)
    consolidate(conn)
    say(conn, "t3", "现在可以提他了", 9)
    assert consolidate(conn, 2.0)["relations"]["lifted"] == 1
    assert [r["statement"].partition("：")[2] for r in list_relations(conn)] == ["不要叫我宝宝"]
    report = forgetting.forget(conn, forgetting.selection(turn_id="t3"), 5.0)
    assert report.relations_reopened == 1
    assert sorted(r["statement"].partition("：")[2] for r in list_relations(conn)) == ["不要叫我宝宝", "别再提他了"]
    report = forgetting.forget(conn, forgetting.selection(turn_id="t2"), 6.0)
    assert report.relations_deleted == 1
    assert [r["statement"].partition("：")[2] for r in list_relations(conn, include_history=True)] == ["别再提他了"]


def test_a_consolidation_planned_before_the_forget_cannot_write_from_it(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "race.db")
    say(conn, "t1", "我住在闵行", 2)
    (memory_id,) = [r[0] for r in conn.execute("SELECT id FROM mem_episodic WHERE role = 'user'")]
    forgetting.forget(conn, forgetting.selection(turn_id="t1"), 5.0)
    fact = {"subject": "user", "key": "home", "statement": "2026-07-02 用户说：我住在闵行", "valid_from": 1.0,
            "valid_to": None, "recorded_at": 6.0, "superseded_by": None, "evidence_json": json.dumps([memory_id]),
            "importance": 5.0, "origin": "consolidation"}
    with pytest.raises(Exception, match="evidence no longer exists"):
        conn.execute(q("insert_fact"), fact)
    with pytest.raises(Exception, match="evidence no longer exists"):
        conn.execute(q("insert_relation"), {"kind": "taboo", "statement": "x", "valid_from": 1.0,
                                            "recorded_at": 6.0, "evidence_json": json.dumps([memory_id])})


def test_range_and_all_need_yes_off_a_terminal(tmp_path: Path) -> None:
    db = tmp_path / "range.db"
    conn = fresh_db(db)
    for day in (1, 2, 3):
        say(conn, f"t{day}", f"第{day}天过得还行", day)
    conn.close()
    refused = run_anima("--db", str(db), "forget", "--since", "2026-07-02", "--until", "2026-07-03")
    assert refused.code == 2 and "--yes" in refused.err
    # Issue 25: the refusal (and the prompt) speak dates in her zone, not Unix seconds.
    assert "from 2026-07-02 00:00:00 to before 2026-07-03 00:00:00 (Asia/Shanghai)" in refused.err
    assert "Unix seconds" not in refused.err
    done = run_anima("--db", str(db), "forget", "--since", "2026-07-02", "--until", "2026-07-03", "--yes", "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["turn_ids"] == ["t2"]  # her zone: 07-02 22:00+08 is inside, 07-03 22:00 is not
    everything = run_anima("--db", str(db), "forget", "--all", "--yes", "--json")
    assert everything.code == 0 and json.loads(everything.out)["turn_ids"] == ["t1", "t3"]
    conn = connect(db)
    assert conn.execute("SELECT count(*) FROM chat_message").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM mem_fts").fetchone()[0] == 0


def test_selection_refuses_ambiguous_or_empty_requests() -> None:
    for bad in ({}, {"turn_id": "t1", "everything": True}, {"since": 5.0, "until": 5.0}, {"turn_id": " "}):
        with pytest.raises(InputError):
            forgetting.selection(**bad)


def test_ram_caches_never_serve_a_forgotten_row_even_when_its_id_is_reused(tmp_path: Path) -> None:
    conn = fresh_db(tmp_path / "cache.db")
    say(conn, "t1", "我住在闵行", 1)
    say(conn, "t2", f"我养了一只猫叫{ASCII}", 2, "好可爱")
    consolidate(conn)
    vector_index.warm(conn, 0)
    t2_user = conn.execute("SELECT id FROM mem_episodic WHERE turn_id = 't2' AND role = 'user'").fetchone()[0]
    query = np.frombuffer(conn.execute("SELECT embedding FROM mem_embedding WHERE id = ?", (t2_user,)).fetchone()[0],
                          dtype=np.float32)
    assert t2_user in vector_index.nearest(conn, query, 2)
    facts_before = facts_recall.fact_matrix(conn, embedder().dim).ids.tolist()
    forgetting.forget(conn, forgetting.selection(turn_id="t2"), 5.0)
    assert t2_user not in vector_index.nearest(conn, query, 4)
    assert len(facts_recall.fact_matrix(conn, embedder().dim).ids) == len(facts_before) - 1
    # The freed ids are handed out again: the cached matrix must hold the new vector, not the old one.
    say(conn, "t3", "今天下雨了", 3, "记得带伞")
    assert conn.execute("SELECT id FROM mem_episodic WHERE turn_id = 't3' AND role = 'user'").fetchone()[0] == t2_user
    hits = vector_index.nearest(conn, query, 4)
    new = np.frombuffer(conn.execute("SELECT embedding FROM mem_embedding WHERE id = ?", (t2_user,)).fetchone()[0],
                        dtype=np.float32)
    assert hits[t2_user] == pytest.approx(float(new @ query), abs=1e-5)


async def test_delete_route_forgets_ids_with_a_slash_lowers_the_indexer_watermark_and_logs_counts_only() -> None:
    from types import SimpleNamespace

    from engine.memory.indexer import Drain
    from tests.api_support import ApiHarness, turn

    api = await ApiHarness().start()
    try:
        assert api.ctx is not None
        assert (await api.call("POST", "/v1/turns", turn("a/1", CANARY_USER, CANARY_REPLY)))[0] == 200
        assert (await api.call("POST", "/v1/turns", turn("a/2", "今天吃了一碗热汤面", "好吃吗")))[0] == 200
        drain = Drain(indexed_upto=4)
        api.ctx.vector_indexer = SimpleNamespace(drain=drain, wake=lambda: None)
        status, body = await api.call("DELETE", "/v1/turns/a%2F2")  # the newest turn: ids 3 and 4 are free again
        assert status == 200 and body["turn_ids"] == ["a/2"] and body["memories"] == 2
        assert drain.indexed_upto == 2  # a new memory may get id 3 again: the indexer must look there
        for query, status_wanted in (("", 400), ("?all=yes", 400), ("?since=abc", 400), ("?x=1", 400),
                                     ("?since=5&until=4", 400), ("?all=true&since=1", 400)):
            status, body = await api.call("DELETE", "/v1/turns" + query)
            assert status == status_wanted and set(body) == {"error"}, (query, body)
        status, body = await api.call("DELETE", "/v1/turns?all=true")
        assert status == 200 and body["turn_ids"] == ["a/1"]
        assert [kw["turns"] for kw in api.log.named("memory.forgotten")] == [1, 1]
        assert ASCII not in api.log.text() and ZH not in api.log.text()
    finally:
        await api.stop()


def test_forget_removes_her_nightly_snapshots_and_queues_a_clean_one(tmp_path: Path) -> None:
    from engine.jobs import maintenance, registry, runner

    db = tmp_path / "anima.db"
    built = build_history(db)
    for night in range(2):
        maintenance.take_snapshot(db, 1_800_000_000.0 + night * 86400, keep=7)
    folder = maintenance.snapshot_folder(db)
    assert all(leaked(p) for p in folder.glob("snapshot-*.db"))  # the copies hold the canary before
    scratch = tmp_path / ".anima.db.verify-4242"  # a replica check killed half-way left its copy
    scratch.mkdir()
    (scratch / "anima.db").write_bytes(db.read_bytes())

    done = run_anima("--db", str(db), "forget", "--turn", "t-canary", "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["snapshots_removed"] == 2
    assert not scratch.exists() and not list(folder.iterdir())
    conn = connect(db)
    try:
        (job,) = [j for j in jobs.list_jobs(conn) if j["kind"] == maintenance.SNAPSHOT]
        assert job["payload"] == {"trigger": "forget"} and job["status"] == "queued"
        claimed = jobs.claim(conn, "w", 1_900_000_000.0, 60, job_id=job["id"])
        assert claimed is not None
        ran = runner.run(conn, claimed, registry.JobRuntime(Settings(), None), lambda: 1_900_000_000.0, [30.0])
        assert ran.status == "done"
    finally:
        conn.close()
    (fresh,) = folder.glob("snapshot-*.db")
    assert leaked(fresh, built["vectors"]) == []


def test_a_snapshot_taken_while_a_forget_commits_is_thrown_away(tmp_path: Path) -> None:
    from engine.errors import StoreError
    from engine.jobs import maintenance

    db = tmp_path / "anima.db"
    build_history(db)
    generations = iter([3, 4])  # read before the copy, and after: a forget committed in between
    with pytest.raises(StoreError, match="a forget ran while the snapshot was taken"):
        maintenance.take_snapshot(db, 1_800_000_000.0, keep=7, generation=lambda: next(generations))
    assert list(maintenance.snapshot_folder(db).iterdir()) == []
