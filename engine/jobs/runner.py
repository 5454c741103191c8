"""Run one claimed job through its registered handler: `done` with its writes, or a failed attempt recorded.

The one runner: the daemon's worker (in a thread, on its own connection) and `anima consolidate
--now` (in the foreground) both claim a job and hand it here, so a job runs the same way whoever
asked for it. The lease is the caller's business (the worker renews it while this runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine.jobs import lease
from engine.jobs.registry import JobRuntime, handler_for
from engine.jobs.status import JobStatus


@dataclass(frozen=True)
class RunResult:
    """How one attempt ended: `status` is the job's status afterwards; `error` is set when it failed."""

    job_id: int
    kind: str
    attempt: int
    status: str
    report: dict[str, Any]
    error: Exception | None = None


def run(conn: Any, job: lease.Job, runtime: JobRuntime, clock: Callable[[], float],
        backoff_s: Sequence[float]) -> RunResult:
    """Dispatch `job` to its handler; on any exception record the failed attempt (queued again after the
    backoff, or failed for good) and return it in the result instead of raising."""
    try:
        report = handler_for(job.kind)(conn, job, runtime, clock())
    except Exception as exc:
        status = lease.fail(conn, job, clock(), f"{type(exc).__name__}: {exc}", backoff_s)
        return RunResult(job.id, job.kind, job.attempts, status, {}, exc)
    return RunResult(job.id, job.kind, job.attempts, JobStatus.DONE.value, report)
