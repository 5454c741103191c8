-- Queries of the local HTTP API (daemon/api): turn replay check and the counts of GET /v1/state.

-- name: api_turn_roles
-- Both sides of a recorded turn, so a replayed POST /v1/turns can be told from a conflicting one.
SELECT role, text FROM chat_message WHERE turn_id = :turn_id

-- name: api_counts
-- The counts GET /v1/state reports (told life only; pending jobs = engine.jobs.status.OPEN).
SELECT
    (SELECT count(*) FROM chat_message) AS chat_messages,
    (SELECT count(DISTINCT turn_id) FROM chat_message) AS chat_turns,
    (SELECT count(*) FROM mem_episodic) AS memories,
    (SELECT count(*) FROM mem_semantic WHERE valid_to IS NULL) AS facts,
    (SELECT count(*) FROM mem_relational WHERE status = 'active') AS relations,
    (SELECT count(*) FROM life_event WHERE told = 1) AS life_told,
    (SELECT count(*) FROM job WHERE status IN ('queued', 'running')) AS jobs_pending,
    (SELECT count(*) FROM job WHERE status = 'failed') AS jobs_failed,
    (SELECT count(*) FROM share_offer WHERE status = 'offered') AS share_offers_open

-- name: api_db_ok
-- The cheapest statement that proves the file answers (GET /v1/health).
SELECT 1

-- name: chat_turn_latest
-- The newest turn recorded for a conversation digest (ids `base` and `base-N` sort in [base, base + '.')):
-- a chat request that repeats a recent conversation reuses its turn and records nothing new.
SELECT turn_id, max(created_at) AS created_at FROM chat_message
WHERE turn_id >= :base AND turn_id < :base || '.'
GROUP BY turn_id ORDER BY created_at DESC LIMIT 1
