"""A directory host's companions as `anima status` and `anima doctor` see them: alive for a full beat cycle.

Issue 25 (defect 12): a host beats each companion every [daemon] beat_s (60 s) and serves her on its own
socket, but per-companion `status` judged her by [heartbeat] interval_s (dead 53 s after her beat) and
`doctor` failed on a socket beside her file that directory mode never makes; there was no `status --dir`.
Here interval_s is 1 s (old verdict: dead 8 s after a beat) and beat_s 20 s, so the test spans a full
cycle of her beats in half a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import NotifyListener, run_anima, write_config
from tests.test_host_e2e import REPO, _init

pytestmark = pytest.mark.e2e
BEAT_S = 20.0


def status(config: Path, db: Path) -> dict[str, object]:
    done = run_anima("--config", str(config), "--db", str(db), "status", "--json")
    assert done.code == 0, done.err
    return dict(json.loads(done.out))


def test_status_and_doctor_judge_a_host_companion_by_her_beat_and_the_host_socket(tmp_path: Path) -> None:
    folder = tmp_path / "companions"
    folder.mkdir()
    config = write_config(tmp_path / "config.toml", heartbeat_s=1.0,
                          extra=f"[daemon]\nwatch_s = 0.0\nbeat_s = {BEAT_S}\n")
    for handle in ("a1", "b2"):
        _init(config, folder, handle)
    notify = NotifyListener(tmp_path / "notify.sock")
    with open(tmp_path / "host.log", "w") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "run", "--dir", str(folder)],
                                stdout=log_file, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                                env={**os.environ, "NOTIFY_SOCKET": str(notify.path)})
    try:
        notify.wait_for("READY=1", 60)
        started = time.monotonic()
        ages = []
        while time.monotonic() - started < BEAT_S + 5:  # a whole cycle of her beats, and then some
            report = status(config, folder / "a1.db")
            daemon = report["daemon"]
            assert isinstance(daemon, dict)
            assert daemon["alive"] is True, daemon
            assert daemon["served_by"] == "directory" and daemon["beat_s"] == BEAT_S
            ages.append(daemon["seconds_since_beat"])
            time.sleep(1.0)
        assert max(a for a in ages if a is not None) > 3 * 1.0 + 5  # past where the old verdict said dead

        doctor = run_anima("--config", str(config), "--db", str(folder / "b2.db"), "doctor", "--json")
        checks = {c["check"]: c for c in json.loads(doctor.out)["checks"]}
        assert checks["socket"]["status"] == "ok", checks["socket"]
        assert str(folder / "anima.sock") in checks["socket"]["detail"]
        assert doctor.code == 0, [c for c in checks.values() if c["status"] == "fail"]

        summary = run_anima("--config", str(config), "status", "--dir", str(folder))
        assert summary.code == 0, summary.err
        lines = summary.out.splitlines()
        assert [line.split()[0] for line in lines[:-1]] == ["a1", "b2"]
        assert all("alive" in line and "None" not in line for line in lines[:-1])
        assert lines[-1] == "2 companion(s): 2 alive, 0 not running, 0 unreadable"
        as_json = json.loads(run_anima("--config", str(config), "status", "--dir", str(folder), "--json").out)
        assert [(c["companion"], c["alive"]) for c in as_json["companions"]] == [("a1", True), ("b2", True)]
    finally:
        proc.send_signal(15)
        try:
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            notify.close()
    stopped = run_anima("--config", str(config), "status", "--dir", str(folder))
    assert stopped.out.splitlines()[-1] == "2 companion(s): 0 alive, 2 not running, 0 unreadable"
