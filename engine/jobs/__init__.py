"""Leased background jobs: states, the lease and its recovery, the kind registry, the runner, the schedule.

Layout: `status` (the JobStatus enum, mirrored by the SQL CHECK), `lease` (enqueue, claim, renew,
finish with the job's own writes, fail with backoff, recover), `registry` (kind -> handler),
`runner` (run one claimed job through its handler), `schedule` (when a job is due). The lease API
is re-exported here, so `from engine import jobs; jobs.claim(...)` reads as before; `registry`,
`runner` and `schedule` import the handlers' code and are imported by name.
"""

from engine.jobs.lease import (
    DEFAULT_BACKOFF_S,
    REASON_LEASE,
    REASON_OWNER_GONE,
    REASON_RESTART,
    SCRATCH_MAX_BYTES,
    Job,
    JobOutcome,
    after_failure,
    backoff_delay,
    claim,
    encode_scratch,
    enqueue,
    fail,
    get_job,
    job_dict,
    job_events,
    job_transaction,
    list_jobs,
    owner_gone,
    recover_interrupted,
    recover_orphans,
    renew,
    set_scratch,
    status_counts,
)
from engine.jobs.status import FINISHED, OPEN, JobStatus

__all__ = [
    "DEFAULT_BACKOFF_S", "FINISHED", "OPEN", "REASON_LEASE", "REASON_OWNER_GONE", "REASON_RESTART",
    "SCRATCH_MAX_BYTES", "Job", "JobOutcome", "JobStatus", "after_failure", "backoff_delay", "claim",
    "encode_scratch", "enqueue", "fail", "get_job", "job_dict", "job_events", "job_transaction", "list_jobs",
    "owner_gone", "recover_interrupted", "recover_orphans", "renew", "set_scratch",
    "status_counts",
]
