"""The states of a job row, one enum mirrored by the SQL CHECK on `job.status` (a test keeps them equal).

A job is `queued` (will run, once `run_after` has come), `running` (leased by one owner), `done`
(its writes committed with this status) or `failed` (gave up after max_attempts). "Will run again"
has one word, `queued`: an attempt that failed or lost its worker goes back to `queued` with a
backoff in `run_after`; what happened to it is history, kept in `job_event` (`failed`,
`interrupted`, `retried`) and in the row's `error`, not a state of its own. Event names are not
states: `job_event.event` says what happened, `job.status` what the job is now.
"""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


# Not finished yet: what `enqueue(unique=True)` reuses and what /v1/state counts as pending.
OPEN: tuple[JobStatus, ...] = (JobStatus.QUEUED, JobStatus.RUNNING)
# Finished for good: nothing will change the row again.
FINISHED: tuple[JobStatus, ...] = (JobStatus.DONE, JobStatus.FAILED)
