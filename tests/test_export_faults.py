"""Defect 8 of issue 25: a disk that fills during `anima export` gives one line and leaves no partial file,
`export --force` keeps the old export whole until the new one is complete, and a kill -9 at any step of
an `export --force` leaves a snapshot at the path that restore accepts (old or new).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.faults import KILL_AT_ENV
from engine.snapshot import export, manifest_path, verify
from engine.store import connect
from tests.api_support import T0
from tests.conftest import REPO, fill_disk, run_anima
from tests.test_snapshot import populate

EXPORT_STEPS = ("export.copied", "export.manifest_written", "export.replaced")


@pytest.fixture
def her(tmp_path: Path) -> Path:
    db = tmp_path / "her.db"
    populate(db, turns=40)
    return db


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".partial", ".next", ".tmp", "-journal")))


def test_a_full_disk_during_export_is_one_line_and_leaves_nothing(her: Path, small_disk: Path) -> None:
    filler = fill_disk(small_disk)
    done = run_anima("--db", str(her), "export", str(small_disk / "her.snapshot"))
    assert done.code == 1 and "Traceback" not in done.err
    assert done.err.strip().splitlines()[-1].startswith("anima: no space left on the disk of")
    assert leftovers(small_disk) == [] and not (small_disk / "her.snapshot").exists()
    filler.unlink()  # the space is back at once: nothing else of the export holds it
    assert run_anima("--db", str(her), "export", str(small_disk / "her.snapshot")).code == 0


def test_export_force_on_a_full_disk_keeps_the_old_export_whole(her: Path, small_disk: Path) -> None:
    snap = small_disk / "her.snapshot"
    export(her, snap, T0)
    old_file, old_manifest = snap.read_bytes(), manifest_path(snap).read_bytes()
    fill_disk(small_disk)
    done = run_anima("--db", str(her), "export", "--force", str(snap))
    assert done.code == 1 and "no space left" in done.err and "Traceback" not in done.err
    assert snap.read_bytes() == old_file and manifest_path(snap).read_bytes() == old_manifest
    assert leftovers(small_disk) == []
    verify(snap)


@pytest.mark.parametrize("step", EXPORT_STEPS)
def test_export_force_killed_at_any_step_leaves_a_restorable_snapshot(step: str, her: Path, tmp_path: Path) -> None:
    snap = tmp_path / "out" / "her.snapshot"
    snap.parent.mkdir()
    old = export(her, snap, T0)
    conn = connect(her)
    conn.execute("INSERT INTO event_log (ts, kind) VALUES (1, 'after_the_first_export')")
    conn.close()
    done = subprocess.run([sys.executable, "-m", "daemon", "--db", str(her), "export", "--force", str(snap)],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, KILL_AT_ENV: step})
    assert done.returncode == -signal.SIGKILL, done.stderr
    seen = verify(snap)  # raises if the file and the manifest restore would use disagree
    is_new = seen["tables"]["event_log"]["rows"] == old["tables"]["event_log"]["rows"] + 1
    assert is_new == (step == "export.replaced")
    assert run_anima("restore", str(snap), "--db", str(tmp_path / "restored.db")).code == 0
