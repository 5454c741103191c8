"""Defect 3 of issue 25: `anima restore` killed (SIGKILL) at any step leaves the old file or the new one at the
path, never none, keeps the old file's committed WAL, and a daemon does not start a new companion where an
interrupted restore into a new path left only its `.restoring` file.

Each case runs the real `anima restore` in a subprocess with ANIMA_TEST_KILL_AT naming one step
(engine/faults.py), so it dies there exactly as under kill -9.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.faults import KILL_AT_ENV
from engine.snapshot import export, restoring_path, table_digests
from engine.store import connect
from tests.api_support import T0, make_database
from tests.conftest import REPO, run_anima, write_config
from tests.test_snapshot import populate

RESTORE_STEPS = ("restore.copied", "restore.verified", "restore.backed_up", "restore.sides_removed",
                 "restore.replaced")
COMMITTED_IN_WAL = 30

WAL_WRITER = """
import os, signal, sys
from engine.store import connect
conn = connect(sys.argv[1])
for i in range(int(sys.argv[2])):
    conn.execute("INSERT INTO event_log (ts, kind) VALUES (?, 'wal_marker')", (i,))
os.kill(os.getpid(), signal.SIGKILL)  # a crash: the commits stay in -wal, never checkpointed
"""


def old_file_with_committed_wal(path: Path) -> None:
    """A database whose last COMMITTED_IN_WAL commits live only in its -wal (its writer was killed)."""
    make_database(path)
    proc = subprocess.run([sys.executable, "-c", WAL_WRITER, str(path), str(COMMITTED_IN_WAL)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert Path(str(path) + "-wal").stat().st_size > 0


def markers(path: Path) -> int:
    """How many of the WAL's committed rows the file at `path` (with its -wal, if any) holds."""
    conn = connect(path, readonly=True)
    try:
        return int(conn.execute("SELECT count(*) FROM event_log WHERE kind = 'wal_marker'").fetchone()[0])
    finally:
        conn.close()


def restore_killed_at(step: str, snap: Path, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", "restore", str(snap), "--db", str(target)],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, KILL_AT_ENV: step})


@pytest.fixture
def snapshot(tmp_path: Path) -> tuple[Path, dict]:
    source = tmp_path / "her.db"
    populate(source)
    snap = tmp_path / "her.snapshot"
    return snap, export(source, snap, T0)


@pytest.mark.parametrize("step", RESTORE_STEPS)
def test_restore_killed_at_any_step_leaves_the_old_file_or_the_new_one(
        step: str, snapshot: tuple[Path, dict], tmp_path: Path) -> None:
    snap, manifest = snapshot
    made = tmp_path / "made" / "other.db"
    made.parent.mkdir()
    old_file_with_committed_wal(made)
    target = tmp_path / "live" / "other.db"
    shutil.copytree(made.parent, target.parent)  # each case starts from the same crashed writer's files

    done = restore_killed_at(step, snap, target)

    assert done.returncode == -signal.SIGKILL, done.stderr
    assert target.exists(), f"killed at {step}: no database at {target}"
    tables = table_digests(connect(target, readonly=True))
    is_new = {t: d for t, d in tables.items() if t != "event_log"} == {
        t: d for t, d in manifest["tables"].items() if t != "event_log"}
    if is_new:
        # The new file is in place: the old one, with every commit of its WAL, is the backup beside it.
        backups = sorted(target.parent.glob("other.db.bak-*[0-9TZ]"))
        assert len(backups) == 1 and markers(backups[0]) == COMMITTED_IN_WAL
    else:
        assert markers(target) == COMMITTED_IN_WAL  # the old file, its WAL's commits still there
    assert is_new == (step == "restore.replaced")


def test_restore_runs_to_the_end_after_a_killed_one(snapshot: tuple[Path, dict], tmp_path: Path) -> None:
    snap, _ = snapshot
    target = tmp_path / "other.db"
    old_file_with_committed_wal(target)
    assert restore_killed_at("restore.backed_up", snap, target).returncode == -signal.SIGKILL
    again = run_anima("restore", str(snap), "--db", str(target))
    assert again.code == 0, again.err
    assert markers(target) == 0 and not restoring_path(target).exists()
    assert all(markers(b) == COMMITTED_IN_WAL for b in target.parent.glob("other.db.bak-*[0-9TZ]"))


def test_run_refuses_a_missing_file_whose_restore_was_cut_short(snapshot: tuple[Path, dict], tmp_path: Path) -> None:
    snap, _ = snapshot
    target = tmp_path / "new" / "her.db"
    assert restore_killed_at("restore.verified", snap, target).returncode == -signal.SIGKILL
    assert not target.exists() and restoring_path(target).exists()
    started = run_anima("--config", str(write_config(tmp_path / "config.toml")), "--db", str(target), "run",
                        timeout=60)
    assert started.code == 2
    assert "interrupted anima restore" in started.err and len(started.err.strip().splitlines()) == 1
    assert not target.exists()  # no demo companion was made where she is being restored
