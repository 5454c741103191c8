-- Inner-life queries: mood_state, mood_trace, activity, life_event.

-- name: life_get_mood_state
-- Her saved inner state (mood, energy, the day machine's state) as JSON, with when it was written.
SELECT state_json, updated_at FROM mood_state WHERE id = 1

-- name: life_put_mood_state
-- Save her inner state (the one mood_state row), replacing the previous one.
INSERT INTO mood_state (id, state_json, updated_at) VALUES (1, :state_json, :now)
ON CONFLICT (id) DO UPDATE SET state_json = excluded.state_json, updated_at = excluded.updated_at

-- name: life_put_trace_point
-- One point of her mood trace (V/A/D, energy, what she was doing); a second point at the same ts replaces it.
INSERT OR REPLACE INTO mood_trace (ts, v, a, d, e, activity) VALUES (:ts, :v, :a, :d, :e, :activity)

-- name: life_prune_trace
-- Drop trace points older than :before (the trace is kept [life] trace_retention_days, not forever).
DELETE FROM mood_trace WHERE ts < :before

-- name: life_trace_between
-- Her mood trace in [:since, :until), oldest first (`anima mood`, the mood bench).
SELECT ts, v, a, d, e, activity FROM mood_trace WHERE ts >= :since AND ts < :until ORDER BY ts

-- name: life_current_activity
-- What she is doing now: the one activity with status 'current' (none before her first beat).
SELECT * FROM activity WHERE status = 'current'

-- name: life_open_suspended_all
-- Activities a chat interrupted that still wait for a resume-or-abandon decision, newest first.
SELECT * FROM activity WHERE status = 'suspended' AND json_extract(detail_json, '$.open') = 1
ORDER BY ended_at DESC, id DESC

-- name: life_insert_activity
-- Start an activity as the current one (the caller ends or suspends the previous one in the same transaction).
INSERT INTO activity (kind, label, started_at, expected_end, why, next_kind, status, detail_json)
VALUES (:kind, :label, :started_at, :expected_end, :why, :next_kind, 'current', :detail_json)

-- name: life_end_activity
-- End an activity (done, abandoned ...) at :ended_at, with its final detail.
UPDATE activity SET status = :status, ended_at = :ended_at, detail_json = :detail_json WHERE id = :id

-- name: life_suspend_activity
-- Suspend the current activity because turn :turn_id interrupted it, keeping the time it had left.
UPDATE activity SET status = 'suspended', ended_at = :ended_at, interrupted_by = :turn_id,
    remaining_s = :remaining_s, detail_json = :detail_json
WHERE id = :id

-- name: life_close_suspended
-- Decide a suspended activity: 'abandoned', or still 'suspended' with its resume in detail; ended_at is kept.
UPDATE activity SET status = :status, detail_json = :detail_json WHERE id = :id

-- name: life_extend_activity
-- Move an activity's expected end (a chat goes on), with its updated detail.
UPDATE activity SET expected_end = :expected_end, detail_json = :detail_json WHERE id = :id

-- name: life_activities_between
-- Activities overlapping [:since, :until) (an open one by its expected end), in start order.
SELECT * FROM activity WHERE started_at < :until AND coalesce(ended_at, expected_end) > :since
ORDER BY started_at, id

-- name: life_insert_life_event
-- Write one life event (told ones with told_at); its id is the cursor's lastrowid.
INSERT INTO life_event (ts, activity_id, kind, text, told, told_at, origin)
VALUES (:ts, :activity_id, :kind, :text, :told, :told_at, :origin)

-- name: life_events_between
-- Life events in [:since, :until), oldest first; untold ones only when :include_untold = 1 (operator view).
SELECT id, ts, activity_id, kind, text, told, told_at, told_turn_id, origin FROM life_event
WHERE ts >= :since AND ts < :until AND (told = 1 OR :include_untold = 1)
ORDER BY ts, id

-- name: life_get_life_event
-- One life event by id, told or not (the caller decides what may leave the daemon).
SELECT id, ts, activity_id, kind, text, told, told_at, told_turn_id, origin FROM life_event WHERE id = :id

-- name: life_mark_life_event_told
-- She told it in turn :turn_id: told = 1 once; telling it again changes nothing.
UPDATE life_event SET told = 1, told_at = :now, told_turn_id = :turn_id WHERE id = :id AND told = 0
