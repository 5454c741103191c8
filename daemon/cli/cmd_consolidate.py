"""`anima consolidate --now [--json]`: one consolidation pass in the foreground, as a job, by the daemon's code path.

Not a second job runner: it queues (or reuses) the consolidation job, claims that one job, and runs
it through engine/jobs/runner.py, the runner the daemon's worker uses.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Any

from daemon.cli.env import CliEnv
from daemon.worker import slow_seconds
from engine import jobs
from engine.errors import ConflictError, InputError
from engine.jobs import registry, runner
from engine.jobs.registry import CONSOLIDATE
from engine.usecases import files
from engine.usecases.oplog import note_cli_write

NO_BACKOFF = (0.0,)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("consolidate", help="turn episodes into facts now (the nightly job, in the foreground)")
    parser.add_argument("--now", action="store_true", help="run one pass now (required)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=handle)


def _recover_stale(conn: Any, env: CliEnv, host: str, now: float) -> None:
    """Free a job whose runner is gone, so a killed earlier run cannot block every later one.

    Expired leases are recovered as the daemon would; beyond that, an owner known dead (its pid is
    gone, or it was a daemon and no daemon holds the file's lock) is recovered at once. The operator
    asked for a pass now, so the retry is due now (no backoff); max_attempts still applies.
    """
    daemon_running = files.daemon_running(env.db_path)
    recovered = jobs.recover_interrupted(conn, now, jobs.REASON_LEASE, NO_BACKOFF)
    recovered += jobs.recover_orphans(
        conn, now, lambda who: jobs.owner_gone(who, host, daemon_running, _pid_alive), NO_BACKOFF)
    for item in recovered:
        print(f"recovered job {item['job_id']} (attempt {item['attempt']}, its runner is gone): {item['status']}",
              file=sys.stderr)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def handle(args: argparse.Namespace, env: CliEnv) -> int:
    if not args.now:
        raise InputError("anima consolidate runs only on request: pass --now (the daemon schedules it otherwise)")
    from engine.memory.embed import make_embedder

    conn = env.open_db(create=False)
    try:
        now = env.clock.now()
        host = socket.gethostname()
        owner = f"cli:{host}:{os.getpid()}"
        _recover_stale(conn, env, host, now)
        job_id = jobs.enqueue(conn, CONSOLIDATE, {"trigger": "cli"}, now, max_attempts=env.settings.jobs.max_attempts)
        job = jobs.claim(conn, owner, now, env.settings.jobs.lease_s, job_id=job_id)
        if job is None:
            state = jobs.get_job(conn, job_id) or {}
            raise ConflictError(f"consolidation job {job_id} is {state.get('status', 'busy')} in the daemon "
                                "(or waiting for its retry); see: anima jobs")
        runtime = registry.JobRuntime(env.settings, make_embedder(env.settings.memory), slow_seconds())
        result = runner.run(conn, job, runtime, env.clock.now, env.settings.jobs.backoff_s)
        if result.error is not None:
            raise result.error
        report = result.report
        note_cli_write(conn, env.clock.now(), "consolidate", job_id=job.id,  # counts: the daemon logs it
                       added=report.get("added"), merged=report.get("merged"), superseded=report.get("superseded"))
    finally:
        conn.close()
    report = {"job_id": job.id, **report}
    if args.json:
        env.print_json(report)
        return 0
    print(f"consolidation job {job.id}: {report['episodes']} episodes, {report['candidates']} candidates "
          f"({report['operator']}); added {report['added']}, merged {report['merged']}, "
          f"superseded {report['superseded']}; {report['facts_active']} active facts of {report['facts_total']}")
    relations = report.get("relations")
    if relations:
        print(f"  relations: added {relations['added']}, merged {relations['merged']}, "
              f"superseded {relations['superseded']}; {report['relations_active']} active")
    if report["gated"]:
        print("  not candidates: " + ", ".join(f"{k} {v}" for k, v in sorted(report["gated"].items())))
    print(f"  operator: {report['operator_note']}")
    for reason in report["rejections"]:
        print(f"  rejected, appended instead: {reason}")
    return 0
