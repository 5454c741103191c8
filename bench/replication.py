"""Replication loss window and cost: turns acknowledged then lost when the host dies, lag, turn latency; JSON out.

A real `anima run` on a new companion, `litestream replicate` on the litestream.yml `anima replication config`
writes (file replica), and a stream of POST /v1/turns over the Unix socket for --seconds. Then, per variant:
  daemon-killed  kill -9 the daemon, let litestream ship what is in the WAL, then stop it (a crashed daemon);
  host-lost      kill -9 the daemon and litestream at the same instant (the host is gone);
  none           no litestream at all (the turn latency baseline, nothing restored).
The replica is restored with `anima restore --from-replica` into a new directory and the acknowledged
turns missing from it are counted, next to the turns acknowledged in the last second before the kill
(the ≤ 1 s acceptance bound). Also: turn latency p50/p99/max (does replication slow her down?), the
largest -wal seen (anima's own checkpoints still bound it while litestream reads it), the snapshots
litestream took (a re-snapshot would mean it lost its place in the WAL), and the lag while streaming.

With --idle-files N: the CPU and RSS of one litestream watching N idle companions, per interval (its
polling grows with companions / monitor-interval).

Usage: python bench/replication.py [--seconds 10] [--variants none,daemon-killed,host-lost] [--turn-bytes 3000]
                                   [--idle-files 1000 --idle-intervals 0.2,1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.api import percentile, wait_for_socket  # noqa: E402
from daemon.replication import lag_of, litestream_binary, litestream_env, parse_replica_url  # noqa: E402


def anima(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)


async def stream(sock: str, seconds: float, size: int, db: Path, url: Any) -> dict[str, Any]:
    acked: list[tuple[str, float]] = []
    latencies: list[float] = []
    lags: list[float] = []
    wal_max = 0
    statuses: dict[int, int] = {}
    stop = threading.Event()

    def probe() -> None:  # on its own thread: a `litestream ltx` run must not pace the stream
        while url is not None and not stop.wait(1.0):
            row = lag_of(db, url)
            if row.get("lag_s") is not None:
                lags.append(row["lag_s"])

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=sock)) as session:
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            body = {"turn_id": f"t{n:06d}", "user": f"message {n} " + "x" * (size // 2),
                    "companion": "ok " + "y" * (size // 2), "ts": "2026-12-01T20:00:00+08:00"}
            started = time.monotonic()
            async with session.post("http://anima/v1/turns", json=body) as resp:
                await resp.read()
                statuses[resp.status] = statuses.get(resp.status, 0) + 1
                if resp.status == 200:
                    acked.append((body["turn_id"], time.monotonic()))
                    latencies.append((time.monotonic() - started) * 1000)
            n += 1
            wal = Path(f"{db}-wal")
            wal_max = max(wal_max, wal.stat().st_size if wal.exists() else 0)
    stop.set()
    prober.join()
    return {"statuses": statuses, "acked": acked, "latencies": latencies, "wal_max": wal_max, "lags": lags}


def run_variant(variant: str, seconds: float, size: int, interval: float | None = None) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="anima-repl-"))
    db = folder / "host" / "her.db"
    db.parent.mkdir()
    sock = str(folder / "her.sock")
    config = folder / "config.toml"
    config.write_text(f"[heartbeat]\ninterval_s = 1.0\n[api]\nsocket_path = \"{sock}\"\n", encoding="utf-8")
    made = anima("--config", str(config), "--db", str(db), "init", "--name", "安", "--birth", "1998-03-14 09:30")
    assert made.returncode == 0, made.stderr
    base = f"file://{folder / 'replica'}"
    url = parse_replica_url(base).child("her") if variant != "none" else None
    litestream = None
    log = open(folder / "litestream.log", "wb")  # noqa: SIM115
    if variant != "none":
        out = folder / "litestream.yml"
        timing = ["--monitor-interval", str(interval), "--sync-interval", str(interval)] if interval else []
        made = anima("--db", str(db), "replication", "config", "--replica", base, "--out", str(out), *timing)
        assert made.returncode == 0, made.stderr
        litestream = subprocess.Popen([str(litestream_binary()), "replicate", "-config", str(out)], stdout=log,
                                      stderr=subprocess.STDOUT, env=litestream_env())
    daemon = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "--db", str(db), "run"],
                              cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        asyncio.run(wait_for_socket(sock, 60))
        seen = asyncio.run(stream(sock, seconds, size, db, url))
        killed_at = time.monotonic()
        daemon.send_signal(signal.SIGKILL)
        if variant == "host-lost" and litestream is not None:
            litestream.send_signal(signal.SIGKILL)
        daemon.wait(10)
        result: dict[str, Any] = {"variant": variant, "seconds": seconds, "turn_bytes": size,
                                  "interval_s": interval}
        acked = seen["acked"]
        result.update(statuses=seen["statuses"], acked=len(acked), turns_per_s=round(len(acked) / seconds, 1),
                      turn_ms_p50=round(percentile(seen["latencies"], 50), 1),
                      turn_ms_p99=round(percentile(seen["latencies"], 99), 1),
                      turn_ms_max=round(max(seen["latencies"] or [0]), 1), wal_bytes_max=seen["wal_max"])
        if litestream is not None:
            if variant == "daemon-killed":
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and lag_of(db, url).get("lag_s") != 0.0:
                    time.sleep(0.1)
            litestream.terminate()  # as systemd stops it (a no-op after the host-lost SIGKILL)
            litestream.wait(30)
            target = folder / "new-host" / "her.db"
            target.parent.mkdir()
            done = anima("restore", "--from-replica", base, "--db", str(target))
            assert done.returncode == 0, done.stderr
            from engine.store import connect

            conn = connect(target, readonly=True)
            present = {r[0] for r in conn.execute("SELECT DISTINCT turn_id FROM chat_message")}
            conn.close()
            missing = [t for t, _ in acked if t not in present]
            result.update(missing=len(missing),
                          acked_last_second=sum(1 for _, at in acked if at > killed_at - 1.0),
                          lost_window_s=round(killed_at - min((at for t, at in acked if t in set(missing)),
                                                              default=killed_at), 3),
                          lag_s_p50=percentile(seen["lags"], 50), lag_s_max=max(seen["lags"] or [0.0]),
                          snapshots=(folder / "litestream.log").read_text(errors="replace").count("snapshot complete"))
        return result
    finally:
        for proc in (daemon, litestream):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        log.close()


def idle_cost(files: int, interval: float, seconds: float = 20.0) -> dict[str, Any]:
    """CPU (share of one core) and RSS of one `litestream replicate` watching `files` idle companions."""
    import shutil

    folder = Path(tempfile.mkdtemp(prefix="anima-repl-idle-"))
    home = folder / "companions"
    home.mkdir()
    made = anima("--db", str(home / "c0000.db"), "init", "--name", "安", "--birth", "1998-03-14 09:30")
    assert made.returncode == 0, made.stderr
    for i in range(1, files):
        shutil.copyfile(home / "c0000.db", home / f"c{i:04d}.db")
    out = folder / "litestream.yml"
    made = anima("replication", "config", "--dir", str(home), "--replica", f"file://{folder / 'replica'}",
                 "--monitor-interval", str(interval), "--sync-interval", str(interval), "--out", str(out))
    assert made.returncode == 0, made.stderr
    proc = subprocess.Popen([str(litestream_binary()), "replicate", "-config", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=litestream_env())

    def ticks() -> int:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    try:
        time.sleep(40)  # the first snapshot and L1 compaction (every 30 s) of every file are not idle
        before, started = ticks(), time.monotonic()
        time.sleep(seconds)
        used = (ticks() - before) / os.sysconf("SC_CLK_TCK")
        rss_kb = int(next(ln for ln in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                          if ln.startswith("VmRSS")).split()[1])
        return {"variant": "idle", "files": files, "interval_s": interval,
                "cpu_core_share": round(used / (time.monotonic() - started), 3), "rss_mb": round(rss_kb / 1024)}
    finally:
        proc.kill()
        proc.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--turn-bytes", type=int, default=3000)
    parser.add_argument("--variants", default="none,daemon-killed,host-lost")
    parser.add_argument("--interval", type=float, default=None,
                        help="litestream monitor and sync interval (default: anima replication config's)")
    parser.add_argument("--idle-files", type=int, default=0,
                        help="also measure litestream's idle CPU and RSS over this many companions")
    parser.add_argument("--idle-intervals", default="0.2,1.0", help="monitor/sync intervals for --idle-files")
    args = parser.parse_args()
    results = [run_variant(v, args.seconds, args.turn_bytes, args.interval) for v in args.variants.split(",") if v]
    if args.idle_files:
        results += [idle_cost(args.idle_files, float(i)) for i in args.idle_intervals.split(",")]
    print(json.dumps({"bench": "replication", "results": results}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
