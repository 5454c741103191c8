"""The systemd units verify, their sandboxing exposure stays at 1.5 or less, and they say what the daemon needs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import AnimaError, ConfigError
from tests.conftest import REPO, unit_directives

ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
RELEASE_BIN = "/opt/anima/current/venv/bin/anima"


def _installed_copy(unit: str, tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this checkout's `anima` (verify checks the binary exists)."""
    anima = Path(sys.executable).with_name("anima")
    target = tmp_path / unit
    target.write_text((REPO / "systemd" / unit).read_text().replace(RELEASE_BIN, str(anima)))
    return target


@needs_analyze
@pytest.mark.parametrize("unit", ["anima.service", "anima@.service"])
def test_unit_verifies(unit: str, tmp_path: Path) -> None:
    path = _installed_copy(unit, tmp_path)
    if unit.endswith("@.service"):
        path = path.rename(tmp_path / "anima@demo.service")
    result = subprocess.run([ANALYZE, "verify", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@needs_analyze
@pytest.mark.parametrize("unit", ["anima.service", "anima@.service"])
def test_security_exposure_is_at_most_1_5(unit: str, tmp_path: Path) -> None:
    path = _installed_copy(unit, tmp_path)
    result = subprocess.run([ANALYZE, "security", "--offline=yes", str(path)], capture_output=True, text=True)
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout + result.stderr)
    assert match, result.stdout[-500:] + result.stderr[-500:]
    exposure = float(match.group(1))
    print(f"{unit}: systemd-analyze security exposure {exposure}")
    assert exposure <= 1.5


def test_units_are_notify_with_watchdog_and_state_directory() -> None:
    for unit in ("anima.service", "anima@.service"):
        text = (REPO / "systemd" / unit).read_text()
        for needle in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "StateDirectory=anima", "DynamicUser=yes"):
            assert needle in text, (unit, needle)
    instance = (REPO / "systemd" / "anima@.service").read_text()
    assert "--db /var/lib/anima/%i/anima.db" in instance


@pytest.mark.parametrize("unit", ["anima.service", "anima@.service"])
def test_units_do_not_loop_on_config_errors_and_allow_what_the_daemon_uses(unit: str) -> None:
    d = unit_directives(unit)
    assert d["RestartPreventExitStatus"] == ["2"]  # exit 2 = config/usage: a restart cannot fix it
    assert ConfigError.exit_code == 2 and AnimaError.exit_code == 1  # ...while a runtime failure is restarted
    assert all("OMP_NUM_THREADS" not in v for v in d.get("Environment", []))  # queries use all cores
    assert int(d["LimitNOFILE"][0]) >= 4096
    # @resources stays denied, but the indexer's own-thread priority calls are allowed back after it.
    filters = d["SystemCallFilter"]
    deny = next(i for i, f in enumerate(filters) if f.startswith("~") and "@resources" in f)
    allowed_after = " ".join(f for f in filters[deny + 1:] if not f.startswith("~")).split()
    assert {"sched_setscheduler", "setpriority"} <= set(allowed_after)


def test_instances_have_their_own_runtime_and_state_directories() -> None:
    d = unit_directives("anima@.service")
    assert d["RuntimeDirectory"] == ["anima/%i"] and d["StateDirectory"] == ["anima/%i"]
    assert "%i" in d["ExecStart"][0]


@needs_analyze
def test_the_sandbox_lets_the_indexer_lower_its_priority(tmp_path: Path) -> None:
    """The unit's filter, compiled by systemd itself, lists the calls _lower_priority makes as allowed."""
    path = _installed_copy("anima.service", tmp_path)
    result = subprocess.run([ANALYZE, "security", "--offline=yes", str(path)], capture_output=True, text=True)
    line = next(ln for ln in result.stdout.splitlines() if "SystemCallFilter=~@resources" in ln)
    assert "sched_setscheduler is allowed" in line or "setpriority is allowed" in line
