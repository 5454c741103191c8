"""Acceptance 4: kill -9 the real daemon mid-consolidation 20 times; each restart recovers, retries, completes whole."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from engine.consolidate.run import consolidate_once
from engine.memory.importer import import_history
from engine.settings import Settings
from engine.store import connect
from engine.store.core import read_switches
from tests.conftest import write_config
from tests.memory_helpers import EVALDATA, embedder, fresh_db

HISTORY = EVALDATA / "zh-dev" / "history.jsonl"
REPETITIONS = int(os.environ.get("ANIMA_CRASH_REPS", "20"))
SLOW_STEP_S = 0.06  # ~25 apply steps -> ~1.5 s inside the job's transaction
pytestmark = [pytest.mark.e2e, pytest.mark.slow,
              pytest.mark.skipif(not HISTORY.exists(), reason="needs ../shared/evaldata/zh-dev")]

# One embedding thread per daemon: on a 2-core runner OpenMP threads of parallel processes fight badly.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}
CONFIG = """
[jobs]
poll_s = 0.1
lease_s = 30.0
backoff_s = [0.0]
[consolidation]
min_new_episodes = 0
"""


def counts(db: Path) -> dict[str, Any]:
    conn = connect(db)
    try:
        return {
            "facts": conn.execute("SELECT count(*) FROM mem_semantic").fetchone()[0],
            "active": conn.execute("SELECT count(*) FROM mem_semantic WHERE valid_to IS NULL").fetchone()[0],
            "superseded": conn.execute("SELECT count(*) FROM mem_semantic WHERE superseded_by IS NOT NULL").fetchone()[0],
            "vectors": conn.execute("SELECT count(*) FROM mem_semantic_vec").fetchone()[0],
            "consolidated": conn.execute("SELECT count(*) FROM mem_episodic WHERE consolidated_at IS NOT NULL").fetchone()[0],
            "statements": sorted(r[0] for r in conn.execute("SELECT statement FROM mem_semantic")),
        }
    finally:
        conn.close()


def job_row(db: Path) -> dict[str, Any] | None:
    conn = connect(db)
    try:
        row = conn.execute("SELECT * FROM job WHERE kind = 'consolidate' ORDER BY id LIMIT 1").fetchone()
        return dict(row) if row else None
    finally:
        conn.close()


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("crash")
    db = folder / "template.db"
    conn = fresh_db(db)
    import_history(conn, embedder(), HISTORY, time.time())
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    baseline = folder / "baseline.db"
    shutil.copy(db, baseline)
    conn = connect(baseline)
    consolidate_once(conn, embedder(), Settings(), read_switches(conn), time.time())
    conn.close()
    return db, counts(baseline)


def test_kill_9_mid_consolidation_20_times(template, start_daemon, tmp_path: Path) -> None:
    source, expected = template
    assert expected["superseded"] >= 3  # the run has real supersessions to half-write
    config = write_config(tmp_path / "crash.toml", heartbeat_s=1.0, extra=CONFIG)
    seed = int(os.environ.get("ANIMA_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    landed = 0
    for rep in range(REPETITIONS):
        db = tmp_path / f"rep{rep}.db"
        shutil.copy(source, db)
        first = start_daemon(db, config=config, env={**ONE_THREAD, "ANIMA_TEST_SLOW_CONSOLIDATION": str(SLOW_STEP_S)})
        wait_for(lambda db=db: (job_row(db) or {}).get("status") == "running", 30, f"rep {rep}: job running")
        time.sleep(rng.uniform(0.0, 1.2))
        first.proc.kill()  # SIGKILL: no drain, no cleanup
        first.proc.wait(timeout=10)
        row = job_row(db)
        assert row["status"] == "running", f"seed {seed} rep {rep}: kill landed after the job finished"
        landed += 1
        assert counts(db)["facts"] == 0, f"seed {seed} rep {rep}: partial writes visible after the kill"

        second = start_daemon(db, config=config, env=ONE_THREAD)
        done = wait_for(lambda db=db: (r := job_row(db)) and r["status"] == "done" and r, 60,
                        f"rep {rep}: retried job done")
        wait_for(lambda d=second: "event=job.done" in d.log_text(), 10, f"rep {rep}: job.done logged")
        second.proc.kill()
        second.proc.wait(timeout=10)

        assert done["attempts"] == 2 and done["error"] is None
        conn = connect(db)
        try:
            events = [(r["event"], r["attempt"], r["detail_json"]) for r in
                      conn.execute("SELECT * FROM job_event WHERE job_id = ? ORDER BY id", (done["id"],))]
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        finally:
            conn.close()
        names = [e[0] for e in events]
        assert names == ["queued", "claimed", "interrupted", "retried", "claimed", "done"], (seed, rep, names)
        interrupted = events[2]
        assert interrupted[1] == 1 and '"reason": "process restart"' in interrupted[2] and '"since"' in interrupted[2]
        assert counts(db) == expected, f"seed {seed} rep {rep}: entry counts differ from a run without the crash"
        assert "job.interrupted" in second.log_text() and "job.done" in second.log_text()
    assert landed == REPETITIONS
