"""Chaos an operator meets on a live daemon (issue 25): connection bursts over the limit, CLI writers beside it; JSON out.

run_bursts(n, limit, rounds): a real `python -m daemon run` with [api] max_connections = `limit`; each
round n clients connect at once and each posts one turn (its own turn_id) on its own connection. Every
client ends with 200, 503 or a dropped connection. After the daemon stops, the file says which turns
were recorded: `lost` counts answers the client never got for a turn that ran (recorded but not 200)
and 200s whose turn is missing; the debug log's api.request lines are compared with what the
clients got (`log_untrue`). The promise: dropped 0, lost 0, log_untrue 0.

run_live_writers(history_lines): a daemon beating every second while a client posts a turn every
50 ms; meanwhile `anima ingest` (a history of `history_lines` messages) and `anima reembed` are run
against her file. The promise: each CLI writer is refused (exit 2, one line) and changes nothing,
0 live requests fail, and her heartbeat does not stall (max beat age seen by /v1/health: a few seconds
of CPU contention on a small machine, not the 31-37 s an ingest held her before).

Usage: python bench/chaos_live.py [--burst 500] [--limit 256] [--rounds 3] [--history 2000] [--only bursts|writers]
                                  [--repo DIR]   (the tree whose daemon and CLI run: a paired baseline)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]  # --repo replaces it (a baseline tree, same bench)


@dataclass
class Daemon:
    proc: subprocess.Popen[bytes]
    db: Path
    config: Path
    socket_path: str
    log_path: Path

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC")}
    out["PYTHONPATH"] = str(REPO) + os.pathsep + out.get("PYTHONPATH", "")
    return out


def start_daemon(root: Path, *, heartbeat_s: float, api_extra: str = "", ready_s: float = 120) -> Daemon:
    db = root / "anima.db"
    socket_path = str(root / "a.sock")
    config = root / "config.toml"
    config.write_text(f"[heartbeat]\ninterval_s = {heartbeat_s}\n[log]\nlevel = \"debug\"\n"
                      f"[api]\nsocket_path = \"{socket_path}\"\n{api_extra}", encoding="utf-8")
    log_path = root / "daemon.log"
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                                stdout=log_file, stderr=subprocess.STDOUT, env=env(), cwd=REPO)
    daemon = Daemon(proc, db, config, socket_path, log_path)
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"daemon exited {proc.returncode}: {log_path.read_text(errors='replace')[-2000:]}")
        if health(socket_path) is not None:
            return daemon
        time.sleep(0.2)
    daemon.stop()
    raise RuntimeError("daemon did not answer /v1/health in time")


def health(path: str) -> dict[str, Any] | None:
    import socket

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(path)
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return None
    head, _, body = data.partition(b"\r\n\r\n")
    return dict(json.loads(body)) if head.startswith(b"HTTP/1.1 200") else None


def post_turn(turn_id: str) -> bytes:
    body = json.dumps({"turn_id": turn_id, "user": f"突发的第{turn_id}句", "companion": "嗯",
                       "ts": "2026-05-28T20:00:00+08:00"}, ensure_ascii=False).encode()
    return (b"POST /v1/turns HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


async def one_client(path: str, turn_id: str, start: asyncio.Event) -> tuple[str, float]:
    await start.wait()
    began = time.perf_counter()
    for _ in range(500):  # a full listen backlog refuses connect(): not an answer, try again
        try:
            reader, writer = await asyncio.open_unix_connection(path)
            break
        except (BlockingIOError, ConnectionRefusedError):
            await asyncio.sleep(0.01)
    else:
        return "no_connect", 0.0
    try:
        writer.write(post_turn(turn_id))
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 120)
    except (ConnectionResetError, BrokenPipeError):
        return "dropped", time.perf_counter() - began
    finally:
        writer.close()
    match = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
    return (match.group(1).decode() if match else "dropped"), time.perf_counter() - began


async def burst(path: str, ids: list[str]) -> dict[str, tuple[str, float]]:
    start = asyncio.Event()
    tasks = [asyncio.create_task(one_client(path, turn_id, start)) for turn_id in ids]
    await asyncio.sleep(0.2)
    start.set()
    return dict(zip(ids, await asyncio.gather(*tasks), strict=True))


def recorded_turns(db: Path, prefix: str) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT DISTINCT turn_id FROM chat_message WHERE turn_id LIKE ?",
                                           (prefix + "%",))}
    finally:
        conn.close()


def run_bursts(n: int = 500, *, limit: int = 256, rounds: int = 3, root: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="anima-live-") as tmp:
        base = root or Path(tmp)
        daemon = start_daemon(base, heartbeat_s=5.0, api_extra=f"max_connections = {limit}\n")
        outcomes: dict[str, tuple[str, float]] = {}
        try:
            for r in range(rounds):
                outcomes.update(asyncio.run(burst(daemon.socket_path, [f"burst{r}-{i}" for i in range(n)])))
        finally:
            exit_code = daemon.stop()
        recorded = recorded_turns(daemon.db, "burst")
        log = daemon.log_path.read_text(errors="replace")
    counts: dict[str, int] = {}
    for status, _ in outcomes.values():
        counts[status] = counts.get(status, 0) + 1
    answered = {t for t, (s, _) in outcomes.items() if s == "200"}
    logged = [line for line in log.splitlines() if re.search(r"\bevent=api\.request\b", line) and "op=recordTurn" in line]
    logged_ok = sum(1 for line in logged if "status=200" in line and "delivered=False" not in line)
    latencies = sorted(ms for s, ms in outcomes.values() if s == "200")
    return {
        "clients": n * rounds, "rounds": rounds, "max_connections": limit, "statuses": counts,
        "recorded": len(recorded),
        "lost": len(recorded - answered) + len(answered - recorded),
        "dropped": counts.get("dropped", 0),
        "log_untrue": abs(logged_ok - len(answered)),
        "ok_p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "ok_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1) if latencies else None,
        "daemon_exit": exit_code,
    }


def history_file(path: Path, lines: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines // 2):
            ts = f"2026-0{1 + i % 9}-{1 + i % 28:02d}T20:00:00+08:00"
            out.write(json.dumps({"ts": ts, "turn_id": f"h{i}", "role": "user", "text": f"以前聊过的第{i}件事"},
                                 ensure_ascii=False) + "\n")
            out.write(json.dumps({"ts": ts, "turn_id": f"h{i}", "role": "companion", "text": f"记得第{i}件"},
                                 ensure_ascii=False) + "\n")
    return path


def run_live_writers(history_lines: int = 2000, *, root: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="anima-live-") as tmp:
        base = root or Path(tmp)
        daemon = start_daemon(base, heartbeat_s=1.0)
        source = history_file(base / "history.jsonl", history_lines)
        statuses: dict[str, int] = {}
        ages: list[float] = []
        stop = threading.Event()

        def live() -> None:
            async def go() -> None:
                i = 0
                while not stop.is_set():
                    status, _ = await one_client(daemon.socket_path, f"live-{i}", started)
                    statuses[status] = statuses.get(status, 0) + 1
                    i += 1
                    await asyncio.sleep(0.05)

            started = asyncio.Event()
            started.set()
            asyncio.run(go())

        def watch() -> None:
            while not stop.is_set():
                answer = health(daemon.socket_path)
                if answer is not None and answer.get("last_beat_age_s") is not None:
                    ages.append(float(answer["last_beat_age_s"]))
                time.sleep(0.2)

        threads = [threading.Thread(target=live), threading.Thread(target=watch)]
        for thread in threads:
            thread.start()
        writers = {}
        try:
            time.sleep(1.0)
            for name, args in (("ingest", ["ingest", str(source)]), ("reembed", ["reembed"]),
                               ("reembed_pending", ["reembed", "--pending"])):
                began = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "daemon", "--config", str(daemon.config), "--db",
                                       str(daemon.db), *args], capture_output=True, text=True, env=env(), cwd=REPO)
                writers[name] = {"exit": done.returncode, "stderr_lines": len(done.stderr.strip().splitlines()),
                                 "seconds": round(time.perf_counter() - began, 2)}
            time.sleep(1.0)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
            daemon.stop()
        imported = recorded_turns(daemon.db, "h")
    failed = sum(v for k, v in statuses.items() if k != "200")
    return {
        "writers": writers,
        "writers_refused": sum(1 for w in writers.values() if w["exit"] == 2 and w["stderr_lines"] == 1),
        "history_turns_written": len(imported),
        "live_requests": sum(statuses.values()), "live_failed": failed,
        "max_beat_age_s": round(max(ages), 3) if ages else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--burst", type=int, default=500)
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=2000)
    parser.add_argument("--only", choices=["bursts", "writers"])
    parser.add_argument("--repo", type=Path, default=None, help="run this tree's daemon and CLI instead")
    args = parser.parse_args()
    global REPO
    if args.repo is not None:
        REPO = args.repo.resolve()
    out: dict[str, Any] = {}
    if args.only in (None, "bursts"):
        out["bursts"] = run_bursts(args.burst, limit=args.limit, rounds=args.rounds)
    if args.only in (None, "writers"):
        out["live_writers"] = run_live_writers(args.history)
    out["repo"] = str(REPO)
    print(json.dumps(out, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
