"""The systemd units verify, and their sandboxing exposure stays at 2.0 or less."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

ANALYZE = shutil.which("systemd-analyze")
pytestmark = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
RELEASE_BIN = "/opt/anima/current/venv/bin/anima"


def _installed_copy(unit: str, tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this checkout's `anima` (verify checks the binary exists)."""
    anima = Path(sys.executable).with_name("anima")
    target = tmp_path / unit
    target.write_text((REPO / "systemd" / unit).read_text().replace(RELEASE_BIN, str(anima)))
    return target


@pytest.mark.parametrize("unit", ["anima.service", "anima@.service"])
def test_unit_verifies(unit: str, tmp_path: Path) -> None:
    path = _installed_copy(unit, tmp_path)
    if unit.endswith("@.service"):
        path = path.rename(tmp_path / "anima@demo.service")
    result = subprocess.run([ANALYZE, "verify", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("unit", ["anima.service", "anima@.service"])
def test_security_exposure_is_at_most_2(unit: str, tmp_path: Path) -> None:
    path = _installed_copy(unit, tmp_path)
    result = subprocess.run([ANALYZE, "security", "--offline=yes", str(path)], capture_output=True, text=True)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout + result.stderr)
    assert match, result.stdout[-500:] + result.stderr[-500:]
    exposure = float(match.group(1))
    print(f"{unit}: systemd-analyze security exposure {exposure}")
    assert exposure <= 2.0


def test_units_are_notify_with_watchdog_and_state_directory() -> None:
    for unit in ("anima.service", "anima@.service"):
        text = (REPO / "systemd" / unit).read_text()
        for needle in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "StateDirectory=anima", "DynamicUser=yes"):
            assert needle in text, (unit, needle)
    assert "/var/lib/anima/%i.db" in (REPO / "systemd" / "anima@.service").read_text()
