-- Inner-life queries: mood_state, mood_trace, activity, life_event.

-- name: life_get_mood_state
SELECT state_json, updated_at FROM mood_state WHERE id = 1

-- name: life_put_mood_state
INSERT INTO mood_state (id, state_json, updated_at) VALUES (1, :state_json, :now)
ON CONFLICT (id) DO UPDATE SET state_json = excluded.state_json, updated_at = excluded.updated_at

-- name: life_put_trace_point
INSERT OR REPLACE INTO mood_trace (ts, v, a, d, e, activity) VALUES (:ts, :v, :a, :d, :e, :activity)

-- name: life_prune_trace
DELETE FROM mood_trace WHERE ts < :before

-- name: life_trace_between
SELECT ts, v, a, d, e, activity FROM mood_trace WHERE ts >= :since AND ts < :until ORDER BY ts

-- name: life_current_activity
SELECT * FROM activity WHERE status = 'current'

-- name: life_open_suspended_all
SELECT * FROM activity WHERE status = 'suspended' AND json_extract(detail_json, '$.open') = 1
ORDER BY ended_at DESC, id DESC

-- name: life_insert_activity
INSERT INTO activity (kind, label, started_at, expected_end, why, next_kind, status, detail_json)
VALUES (:kind, :label, :started_at, :expected_end, :why, :next_kind, 'current', :detail_json)

-- name: life_end_activity
UPDATE activity SET status = :status, ended_at = :ended_at, detail_json = :detail_json WHERE id = :id

-- name: life_suspend_activity
UPDATE activity SET status = 'suspended', ended_at = :ended_at, interrupted_by = :turn_id,
    remaining_s = :remaining_s, detail_json = :detail_json
WHERE id = :id

-- name: life_close_suspended
UPDATE activity SET status = :status, detail_json = :detail_json WHERE id = :id

-- name: life_extend_activity
UPDATE activity SET expected_end = :expected_end, detail_json = :detail_json WHERE id = :id

-- name: life_activities_between
SELECT * FROM activity WHERE started_at < :until AND coalesce(ended_at, expected_end) > :since
ORDER BY started_at, id

-- name: life_insert_life_event
INSERT INTO life_event (ts, activity_id, kind, text, told, told_at, origin)
VALUES (:ts, :activity_id, :kind, :text, :told, :told_at, :origin)

-- name: life_events_between
SELECT id, ts, activity_id, kind, text, told, told_at, told_turn_id, origin FROM life_event
WHERE ts >= :since AND ts < :until AND (told = 1 OR :include_untold = 1)
ORDER BY ts, id

-- name: life_get_life_event
SELECT id, ts, activity_id, kind, text, told, told_at, told_turn_id, origin FROM life_event WHERE id = :id

-- name: life_mark_life_event_told
UPDATE life_event SET told = 1, told_at = :now, told_turn_id = :turn_id WHERE id = :id AND told = 0
