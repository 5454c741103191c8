"""Chaos for the clock: a real `anima run` whose wall clock is stepped -120 s, -1 day and +1 day while it beats.

Prints one JSON object. The daemon runs with the test hook ANIMA_TEST_CLOCK_FILE (her wall clock is
the real one plus the offset in that file; its monotonic clock is untouched), a NOTIFY_SOCKET this
script listens on (so every WATCHDOG=1 ping is counted, as systemd would see them), and its API on a
Unix socket (GET /v1/health after each step). For each step it counts pings over --window seconds,
the longest silence between pings (systemd's watchdog kills at WatchdogSec, 60 s in the units), what
health says, and whether `clock.stepped` was logged with the step's size.
Pass: pings keep their rate after every step, the longest silence stays near one heartbeat, health is
alive with a last-beat age under two heartbeats. `run_clock_steps(...)` is the same as a function.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_STEPS = (-120.0, -86400.0, 86400.0)


def _health(path: str) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: anima\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return dict(json.loads(data.partition(b"\r\n\r\n")[2]))


def _pings(sock: socket.socket, seconds: float) -> list[float]:
    """Monotonic arrival times of WATCHDOG=1 datagrams over `seconds`."""
    stamps: list[float] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data = sock.recv(4096).decode()
        except TimeoutError:
            break
        if "WATCHDOG=1" in data.split("\n"):
            stamps.append(time.monotonic())
    return stamps


def _wait_ready(sock: socket.socket, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited with {proc.returncode} before READY=1")
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            if "READY=1" in sock.recv(4096).decode().split("\n"):
                return
        except TimeoutError:
            break
    raise RuntimeError("no READY=1 from the daemon")


def run_clock_steps(steps: tuple[float, ...] = DEFAULT_STEPS, heartbeat_s: float = 1.0, window_s: float = 8.0,
                    python: str = sys.executable, repo: Path = REPO) -> dict[str, Any]:
    """Start a real daemon, step its wall clock by each of `steps` (cumulatively), and measure each phase."""
    with tempfile.TemporaryDirectory(prefix="anima-chaos-clock-", dir="/tmp") as tmp:
        root = Path(tmp)
        offset_file, api_sock, notify_path = root / "offset", str(root / "a.sock"), str(root / "n.sock")
        offset_file.write_text("0")
        config = root / "config.toml"
        config.write_text(f'[heartbeat]\ninterval_s = {heartbeat_s}\n[log]\nlevel = "info"\n'
                          f'[api]\nsocket_path = "{api_sock}"\n', encoding="utf-8")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        log_path = root / "daemon.log"
        env = {**os.environ, "NOTIFY_SOCKET": notify_path, "ANIMA_TEST_CLOCK_FILE": str(offset_file),
               "PYTHONPATH": str(repo) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen([python, "-m", "daemon", "--config", str(config), "--db", str(root / "her.db"),
                                     "run"], stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=repo)
            try:
                _wait_ready(notify, proc, 120)
                phases = [_phase("baseline", 0.0, notify, api_sock, window_s, heartbeat_s)]
                offset = 0.0
                for step in steps:
                    offset += step
                    offset_file.write_text(repr(offset))
                    phases.append(_phase(f"step {step:+g} s", step, notify, api_sock, window_s, heartbeat_s))
            finally:
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(timeout=30)
                notify.close()
        log = log_path.read_text(errors="replace")
    logged = [float(m) for m in re.findall(r"event=clock\.stepped level=warning step_s=(-?[0-9.]+)", log)]
    for phase in phases[1:]:
        phase["clock_stepped_logged"] = any(abs(x - phase["step_s"]) < 5 for x in logged)
    stepped = phases[1:]
    return {
        "heartbeat_s": heartbeat_s,
        "window_s": window_s,
        "phases": phases,
        "all_steps_logged": all(p["clock_stepped_logged"] for p in stepped),
        "min_ping_rate_ratio": round(min(p["pings"] / max(1, phases[0]["pings"]) for p in stepped), 3),
        "max_silence_s": max(p["max_silence_s"] for p in phases),
        "health_truthful": all(p["health_alive"] and p["health_age_s"] < 2 * heartbeat_s + 1 for p in phases),
        "exit_code": code,
        "tracebacks_in_log": log.count("Traceback"),
    }


def _phase(name: str, step: float, notify: socket.socket, api_sock: str, window_s: float,
           heartbeat_s: float) -> dict[str, Any]:
    began = time.monotonic()
    stamps = _pings(notify, window_s)
    edges = [began, *stamps]
    silence = max((b - a for a, b in zip(edges, edges[1:], strict=False)), default=window_s)
    health = _health(api_sock)
    return {"phase": name, "step_s": step, "pings": len(stamps), "expected_pings": round(window_s / heartbeat_s),
            "max_silence_s": round(silence, 3), "health_alive": health.get("alive"),
            "health_age_s": health.get("last_beat_age_s")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=8.0, help="seconds counted per phase (default 8)")
    parser.add_argument("--heartbeat", type=float, default=1.0, help="[heartbeat] interval_s (default 1)")
    parser.add_argument("--repo", type=Path, default=REPO, help="checkout whose daemon to run (to compare versions)")
    args = parser.parse_args()
    print(json.dumps(run_clock_steps(heartbeat_s=args.heartbeat, window_s=args.window, repo=args.repo),
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
