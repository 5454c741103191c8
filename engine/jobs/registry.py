"""From job kind to handler: the one table the daemon's worker and `anima consolidate` dispatch through.

arq's `Worker.functions` is the model: a job names its kind, the registry names the function that
runs it, and a kind nobody registered is a clear error rather than a silent skip. A handler runs
inside a claimed job's lease and must commit its writes with the job's `done`
(`engine.jobs.lease.job_transaction`), so a retried job never lands twice. To add a kind: write
its handler here (or import it) and add one line to `HANDLERS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from engine.consolidate import operator_model
from engine.consolidate.run import JOB_KIND as CONSOLIDATE
from engine.consolidate.run import consolidate_once
from engine.errors import InputError
from engine.jobs import maintenance
from engine.jobs.lease import Job, job_transaction
from engine.settings import Settings
from engine.store.core import read_switches


@dataclass(frozen=True)
class JobRuntime:
    """What a handler may use beyond its connection and job: settings, the embedder, the test hook."""

    settings: Settings
    embedder: Any
    slow_s: float = 0.0  # ANIMA_TEST_SLOW_CONSOLIDATION: a pause between apply steps, so a kill can land mid-job
    replica_verifier: maintenance.ReplicaVerifier | None = None  # the daemon's (daemon/replica_verify.py)


Handler = Callable[[Any, Job, JobRuntime, float], dict[str, Any]]


class UnknownJobKindError(InputError):
    """A job names a kind no handler is registered for (a newer anima queued it, or a typo)."""


def _consolidate(conn: Any, job: Job, runtime: JobRuntime, now: float) -> dict[str, Any]:
    # The switches are read from the file, not a cache: a job may run minutes after it was queued.
    model = operator_model.from_settings(runtime.settings)
    return consolidate_once(conn, runtime.embedder, runtime.settings, read_switches(conn), now, model,
                            commit=job_transaction(conn, job, now), slow_s=runtime.slow_s)


def _maintenance(run: Callable[[Any, Job, Settings, float], dict[str, Any]]) -> Handler:
    """A maintenance handler (engine/jobs/maintenance.py) needs only the settings of the runtime."""
    return lambda conn, job, runtime, now: run(conn, job, runtime.settings, now)


HANDLERS: Mapping[str, Handler] = MappingProxyType({
    CONSOLIDATE: _consolidate,
    maintenance.SNAPSHOT: _maintenance(maintenance.run_snapshot),
    maintenance.INTEGRITY: _maintenance(maintenance.run_integrity_check),
    maintenance.RETENTION: _maintenance(maintenance.run_trace_retention),
    maintenance.REPLICA_VERIFY: lambda conn, job, runtime, now: maintenance.run_replica_verify(
        conn, job, runtime.settings, now, runtime.replica_verifier),
})


def kinds() -> list[str]:
    """Every kind this code can run: what the worker claims (a job of another kind waits for code that knows it)."""
    return sorted(HANDLERS)


def handler_for(kind: str) -> Handler:
    """The handler of `kind`, or UnknownJobKindError naming the kinds that exist."""
    try:
        return HANDLERS[kind]
    except KeyError:
        raise UnknownJobKindError(
            f"no handler for job kind {kind!r}; this anima runs {', '.join(kinds())} "
            "(a newer anima may have queued it: upgrade, or leave the job to fail)"
        ) from None
