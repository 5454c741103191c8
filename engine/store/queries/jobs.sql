-- Jobs: leased background work and its history (engine/jobs.py).

-- name: insert_job
INSERT INTO job (kind, payload_json, status, attempts, max_attempts, run_after, created_at, updated_at)
VALUES (:kind, :payload_json, 'queued', 0, :max_attempts, :run_after, :now, :now)

-- name: open_job_of_kind
SELECT * FROM job WHERE kind = :kind AND status IN ('queued', 'running', 'interrupted') ORDER BY id LIMIT 1

-- name: claim_job
-- One statement picks and leases the oldest ready job: no window between "find" and "take".
UPDATE job SET status = 'running', attempts = attempts + 1, lease_owner = :owner,
    lease_until = :now + :lease_s, started_at = :now, updated_at = :now, error = NULL
WHERE id = (
    SELECT id FROM job
    WHERE status IN ('queued', 'interrupted') AND run_after <= :now
      AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
      AND (:job_id IS NULL OR id = :job_id)
    ORDER BY run_after, id LIMIT 1
)
RETURNING *

-- name: renew_lease
UPDATE job SET lease_until = :now + :lease_s, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :owner

-- name: finish_job
UPDATE job SET status = 'done', lease_owner = NULL, lease_until = NULL, result_json = :result_json,
    error = :error, scratch_json = :scratch_json, finished_at = :now, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :owner

-- name: requeue_job
UPDATE job SET status = :status, lease_owner = NULL, lease_until = NULL, run_after = :run_after,
    error = :error, updated_at = :now, finished_at = CASE WHEN :status = 'failed' THEN :now ELSE NULL END
WHERE id = :id

-- name: set_scratch
UPDATE job SET scratch_json = :scratch_json, updated_at = :now
WHERE id = :id AND status = 'running' AND lease_owner = :owner

-- name: running_jobs
SELECT * FROM job WHERE status = 'running' ORDER BY id

-- name: expired_jobs
SELECT * FROM job WHERE status = 'running' AND lease_until < :now ORDER BY id

-- name: get_job
SELECT * FROM job WHERE id = :id

-- name: list_jobs
SELECT * FROM job ORDER BY id DESC LIMIT :limit

-- name: insert_job_event
INSERT INTO job_event (job_id, ts, attempt, event, detail_json) VALUES (:job_id, :ts, :attempt, :event, :detail_json)

-- name: job_events
SELECT * FROM job_event WHERE job_id = :job_id ORDER BY id

-- name: last_finished_of_kind
SELECT max(CASE WHEN status = 'done' THEN finished_at END) AS last_done,
       max(CASE WHEN status = 'failed' THEN finished_at END) AS last_failed
FROM job WHERE kind = :kind AND status IN ('done', 'failed')
