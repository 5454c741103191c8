"""Acceptance 1 on zh-dev through the real CLI: `anima consolidate --now`, `anima facts`, `--as-of`, idempotence."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engine.memory.importer import import_history
from tests.conftest import run_anima
from tests.memory_helpers import EVALDATA, embedder, fresh_db

HISTORY = EVALDATA / "zh-dev" / "history.jsonl"
pytestmark = pytest.mark.skipif(not HISTORY.exists(), reason="needs ../shared/evaldata/zh-dev")


def facts(db: Path, *extra: str) -> list[dict]:
    result = run_anima("--db", str(db), "facts", "--json", *extra)
    assert result.code == 0, result.err
    return json.loads(result.out)["facts"]


def mentioning(rows: list[dict], text: str, key: str) -> list[dict]:
    return [f for f in rows if text in f["statement"] and f["key"] == key]


@pytest.fixture(scope="module")
def consolidated(tmp_path_factory):
    db = tmp_path_factory.mktemp("zhdev") / "anima.db"
    conn = fresh_db(db)
    import_history(conn, embedder(), HISTORY, time.time())
    conn.close()
    first = run_anima("--db", str(db), "consolidate", "--now", "--json")
    assert first.code == 0, first.err
    return db, json.loads(first.out)


def test_active_facts_hold_the_updates(consolidated) -> None:
    db, report = consolidated
    assert report["operator"] == "rules" and not report["fallback"] and report["superseded"] >= 3
    active = facts(db)
    assert len(mentioning(active, "闵行", "home")) == 1
    assert len(mentioning(active, "白班", "work_shift")) == 1
    assert len(mentioning(active, "毛不易", "music_taste")) == 1
    # Exactly one active fact per updated key: the stale ones are no longer active.
    for key in ("home", "work_shift", "music_taste"):
        assert len([f for f in active if f["key"] == key]) == 1, key
    # Unrelated facts were not retired by the updates.
    assert mentioning(active, "芝麻", "pet:芝麻") and mentioning(active, "海鲜", "allergy:海鲜")
    assert [f for f in active if "怕蛇" in f["statement"]]


def test_stale_facts_are_kept_with_valid_to_and_a_successor(consolidated) -> None:
    db, _ = consolidated
    every = facts(db, "--all")
    by_id = {f["id"]: f for f in every}
    for stale, key, fresh in (("徐汇", "home", "闵行"), ("夜班", "work_shift", "白班"),
                              ("偶像是周深", "music_taste", "毛不易")):
        (old,) = mentioning(every, stale, key)
        assert old["valid_to"] is not None and old["superseded_by"] is not None
        successor = by_id[old["superseded_by"]]
        assert fresh in successor["statement"] and successor["valid_from"] == old["valid_to"]


def test_as_of_a_date_before_the_updates_returns_the_old_facts(consolidated) -> None:
    db, _ = consolidated
    then = facts(db, "--as-of", "2026-07-05")
    assert mentioning(then, "徐汇", "home") and mentioning(then, "夜班", "work_shift")
    assert mentioning(then, "偶像是周深", "music_taste")
    assert not [f for f in then if any(w in f["statement"] for w in ("闵行", "白班", "毛不易"))]
    # A fact said later is not "known" on an earlier date.
    assert not [f for f in then if "宫崎骏" in f["statement"]]


def test_statements_are_the_users_words_with_their_date(consolidated) -> None:
    db, _ = consolidated
    lines = {json.loads(line)["text"]: json.loads(line)["ts"][:10]
             for line in HISTORY.read_text(encoding="utf-8").splitlines()}
    for fact in facts(db, "--all"):
        date, _, rest = fact["statement"].partition(" 用户说：")
        assert lines.get(rest) == date, fact["statement"]


def test_second_run_changes_nothing(consolidated) -> None:
    db, _ = consolidated
    before = facts(db, "--all")
    again = run_anima("--db", str(db), "consolidate", "--now", "--json")
    assert again.code == 0, again.err
    report = json.loads(again.out)
    assert (report["candidates"], report["added"], report["merged"], report["superseded"]) == (0, 0, 0, 0)
    assert facts(db, "--all") == before


def test_jobs_lists_the_cli_runs_as_done(consolidated) -> None:
    db, _ = consolidated
    result = run_anima("--db", str(db), "jobs", "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["jobs"]
    assert rows and all(r["kind"] == "consolidate" and r["status"] == "done" for r in rows)
    assert [e["event"] for e in rows[-1]["events"]] == ["queued", "claimed", "done"]


def test_consolidate_without_now_is_a_usage_error(consolidated) -> None:
    db, _ = consolidated
    result = run_anima("--db", str(db), "consolidate")
    assert result.code == 2 and "--now" in result.err


def test_the_user_is_still_a_nurse_after_the_shift_changes(consolidated) -> None:
    # d01 "我是医院的夜班护士" states a job and a shift; 白班 (d14) retires the shift only.
    db, _ = consolidated
    active = facts(db)
    jobs = [f for f in active if f["key"] == "job"]
    assert len(jobs) == 1 and "护士" in jobs[0]["statement"]
    assert jobs[0]["statement"].startswith(("2026-06-01", "2026-07-01", "2026-07-25"))
    every = facts(db, "--all")
    (night,) = mentioning(every, "夜班护士", "work_shift")
    (day,) = mentioning(active, "白班", "work_shift")
    assert night["valid_to"] == day["valid_from"] and night["superseded_by"] == day["id"]
    # The blood-donation nurse (d15) is not the user's job.
    assert not [f for f in every if f["key"] == "job" and "献血" in f["statement"]]
