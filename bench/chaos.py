"""The reliability battery in one run: kill -9 loop, fuzz, idle connections, disk full, clock steps; prints JSON.

Each part starts real daemons of this checkout on Unix sockets in a temporary directory and stops
by itself (bounded counts and times); the parts live in bench/chaos_storage.py, chaos_http.py and
chaos_clock.py, each runnable on its own. Targets (issue 11): >= 200 kill -9 cycles with 0
acknowledged turns lost; >= 10,000 fuzzed requests with 0 5xx and 0 state changes from rejected
requests; 1,100 idle connections at a 1024 file limit leave /v1/health answering within 1 s and the
log under 1 MB; a full disk is a 503 state with a bounded WAL and a stop that completes; wall-clock
steps never stop the heartbeat or the watchdog.

The operator faults of issue 25 are parts too (bench/chaos_ops.py and chaos_live.py): kills inside
`anima restore` and `export --force` (the path never empty, nothing restorable lost), forget under
Litestream replication (0 forgotten bytes in the file, WAL or any reachable replica), bursts of 500 at
max_connections 256 (0 answers lost: each is answered or refused 503 before it runs), and a live
ingest/reembed beside a running daemon (0 live requests failed).

Usage: python bench/chaos.py [--cycles 200] [--fuzz 10000] [--idle 1100]
       [--only kill,fuzz,idle,disk,clock,restore,export,forget,bursts,writers]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chaos_clock  # noqa: E402
import chaos_http  # noqa: E402
import chaos_live  # noqa: E402
import chaos_ops  # noqa: E402
import chaos_storage  # noqa: E402

PARTS = ("kill", "fuzz", "idle", "disk", "clock", "restore", "export", "forget", "bursts", "writers")


def parts(args: argparse.Namespace) -> dict[str, Callable[[], dict[str, Any]]]:
    return {
        "kill": lambda: chaos_storage.run_kill_loop(args.cycles),
        "fuzz": lambda: chaos_http.run_fuzz(args.fuzz),
        "idle": lambda: chaos_http.run_idle_connections(args.idle),
        "disk": lambda: chaos_storage.run_disk_full(),
        "clock": lambda: chaos_clock.run_clock_steps(),
        "restore": lambda: chaos_ops.run_restore_kills(),
        "export": lambda: chaos_ops.run_export_kills(),
        "forget": lambda: chaos_ops.run_forget_replication(),
        "bursts": lambda: chaos_live.run_bursts(500, limit=256, rounds=2),
        "writers": lambda: chaos_live.run_live_writers(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=200, help="kill -9 cycles (default 200)")
    parser.add_argument("--fuzz", type=int, default=10_000, help="fuzzed requests (default 10000)")
    parser.add_argument("--idle", type=int, default=1100, help="idle connections at a 1024 fd limit (default 1100)")
    parser.add_argument("--only", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    args = parser.parse_args()
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        parser.error(f"--only: unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    runners = parts(args)
    report: dict[str, Any] = {}
    for name in chosen:
        started = time.monotonic()
        report[name] = runners[name]()
        report[name]["wall_s"] = round(time.monotonic() - started, 1)
        print(json.dumps({name: report[name]}, ensure_ascii=False), file=sys.stderr, flush=True)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
