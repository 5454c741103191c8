-- 0008_job_status: one word for "will run again". A job is queued, running, done or failed
-- (engine/jobs/status.py); an attempt that lost its worker goes back to `queued` after its backoff,
-- and the interruption stays in job_event, where it always was. SQLite cannot alter a CHECK, so the
-- table is rebuilt: copied aside, recreated under its own name (so job_event's REFERENCES job(id)
-- and the stored schema read as before), filled back with every row, `interrupted` read as
-- `queued` (same run_after, same attempts: the retry it was waiting for is unchanged).
-- Foreign keys are deferred to the commit: job_event rows point at ids that exist again by then.

PRAGMA defer_foreign_keys = ON;

CREATE TABLE job_before_0008 AS SELECT * FROM job;

DROP TABLE job;

-- Leased background work; status values = engine.jobs.status.JobStatus (a test keeps them equal).
CREATE TABLE job (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL,
    payload_json    TEXT NOT NULL DEFAULT '{}',
    status          TEXT NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'running', 'done', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL DEFAULT 5,
    run_after       REAL NOT NULL,
    lease_owner     TEXT,
    lease_until     REAL,
    scratch_json    TEXT NOT NULL DEFAULT '{}' CHECK (length(scratch_json) <= 65536),
    result_json     TEXT,
    error           TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    started_at      REAL,
    finished_at     REAL
);

INSERT INTO job (id, kind, payload_json, status, attempts, max_attempts, run_after, lease_owner, lease_until,
                 scratch_json, result_json, error, created_at, updated_at, started_at, finished_at)
SELECT id, kind, payload_json, CASE WHEN status = 'interrupted' THEN 'queued' ELSE status END, attempts,
       max_attempts, run_after, lease_owner, lease_until, scratch_json, result_json, error, created_at,
       updated_at, started_at, finished_at
FROM job_before_0008 ORDER BY id;

DROP TABLE job_before_0008;

CREATE INDEX job_ready ON job(status, run_after);
CREATE INDEX job_kind_status ON job(kind, status);
