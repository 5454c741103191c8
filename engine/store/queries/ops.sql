-- Operator-facing reads and writes: the tail of event_log the daemon logs, and resetting a switch.

-- name: events_after
-- Lifecycle events newer than a cursor, oldest first (the daemon logs CLI writes from here).
SELECT id, ts, kind, detail_json FROM event_log WHERE id > :after ORDER BY id LIMIT :limit

-- name: last_event_id
-- The newest event's id (0 when the log is empty): where the daemon starts its tail.
SELECT coalesce(max(id), 0) AS id FROM event_log

-- name: delete_control
-- Forget a stored switch value so the registry default applies again (the change itself is an event).
DELETE FROM life_control WHERE key = :key

-- name: quick_check
-- SQLite's page-level consistency check (fast: no index content comparison); 'ok' when sound.
PRAGMA quick_check

-- name: clock_events_since
-- Wall-clock steps the daemon noticed (while running or at start) since a time, for `anima doctor`.
SELECT ts, kind, detail_json FROM event_log WHERE kind IN ('clock_stepped', 'clock_backwards') AND id > :after_id
ORDER BY id

-- name: last_lifecycle_events
-- The newest start/stop events, newest first: where the previous run ended, for the daemon's log tail.
SELECT id, kind FROM event_log WHERE kind IN ('start', 'stop') ORDER BY id DESC LIMIT 2

-- name: last_restore_event
-- The newest restore of this file (written into the restored copy by engine/snapshot.restore).
SELECT id FROM event_log WHERE kind = 'restore' ORDER BY id DESC LIMIT 1
