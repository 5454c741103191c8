-- Jobs: leased background work and its history (engine/jobs/lease.py owns every query here).
-- Status literals are the values of engine.jobs.status.JobStatus (queued, running, done, failed).

-- name: insert_job
-- A new job, queued to run from :run_after, with no attempt yet.
INSERT INTO job (kind, payload_json, status, attempts, max_attempts, run_after, created_at, updated_at)
VALUES (:kind, :payload_json, 'queued', 0, :max_attempts, :run_after, :now, :now)

-- name: open_job_of_kind
-- The oldest unfinished (queued or running) job of a kind, which a unique enqueue reuses.
SELECT * FROM job WHERE kind = :kind AND status IN ('queued', 'running') ORDER BY id LIMIT 1

-- name: any_ready_job
-- Whether any job is queued and past its run_after (the index job_ready answers it): most claims find none.
SELECT EXISTS (SELECT 1 FROM job WHERE status = 'queued' AND run_after <= :now)

-- name: claim_job
-- One statement picks and leases the oldest ready job: no window between "find" and "take".
UPDATE job SET status = 'running', attempts = attempts + 1, lease_owner = :owner,
    lease_until = :now + :lease_s, started_at = :now, updated_at = :now, error = NULL
WHERE id = (
    SELECT id FROM job
    WHERE status = 'queued' AND run_after <= :now
      AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
      AND (:job_id IS NULL OR id = :job_id)
    ORDER BY run_after, id LIMIT 1
)
RETURNING *

-- name: renew_lease
-- Extend the lease of a job still running under this owner (no row changed: the job is no longer ours).
UPDATE job SET lease_until = :now + :lease_s, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :owner

-- name: finish_job
-- Mark a running job done with its result, only while this owner still holds the lease.
UPDATE job SET status = 'done', lease_owner = NULL, lease_until = NULL, result_json = :result_json,
    error = :error, scratch_json = :scratch_json, finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :owner

-- name: requeue_job
-- Release a job after a failed or interrupted attempt: queued again from :run_after, or failed for good.
UPDATE job SET status = :status, lease_owner = NULL, lease_until = NULL, run_after = :run_after,
    error = :error, updated_at = :now, finished_at = CASE WHEN :status = 'failed' THEN :now ELSE NULL END
WHERE id = :id

-- name: set_scratch
-- Save a running job's small private progress note, only while this owner holds the lease.
UPDATE job SET scratch_json = :scratch_json, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :owner

-- name: running_jobs
-- Every running job, whatever its lease (recovery at start: no run of an earlier process survives it).
SELECT * FROM job WHERE status = 'running' ORDER BY id

-- name: expired_jobs
-- Running jobs whose lease ran out before :now (their worker stopped renewing).
SELECT * FROM job WHERE status = 'running' AND lease_until < :now ORDER BY id

-- name: get_job
-- One job by id.
SELECT * FROM job WHERE id = :id

-- name: list_jobs
-- The newest :limit jobs, newest first (anima jobs).
SELECT * FROM job ORDER BY id DESC LIMIT :limit

-- name: job_status_counts
-- How many jobs are in each status (anima status).
SELECT status, count(*) AS n FROM job GROUP BY status

-- name: insert_job_event
-- Append one entry to a job's history (queued, claimed, done, failed, interrupted, retried).
INSERT INTO job_event (job_id, ts, attempt, event, detail_json) VALUES (:job_id, :ts, :attempt, :event, :detail_json)

-- name: job_events
-- A job's history, oldest first.
SELECT * FROM job_event WHERE job_id = :job_id ORDER BY id

-- name: last_finished_of_kind
-- When a kind last finished done and last failed for good (the schedule's memory).
SELECT max(CASE WHEN status = 'done' THEN finished_at END) AS last_done,
       max(CASE WHEN status = 'failed' THEN finished_at END) AS last_failed
FROM job WHERE kind = :kind AND status IN ('done', 'failed')
