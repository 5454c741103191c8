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

-- Export and restore (engine/snapshot.py): what a snapshot holds, read from the file itself. A snapshot
-- may be of an older schema, so each summary query reads one table and a missing table counts as empty.

-- name: snapshot_tables
-- Every table of the file with its CREATE statement (virtual tables are told apart by it), by name.
SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name

-- name: snapshot_table_sql
-- The CREATE statement of one table (WITHOUT ROWID tables are hashed in column order).
SELECT sql FROM sqlite_master WHERE name = :name

-- name: snapshot_table_columns
-- One table's columns in order, with each column's place in the primary key (0 when not in it).
SELECT cid, name, type, "notnull", dflt_value, pk FROM pragma_table_info(:table) ORDER BY cid

-- name: snapshot_table_rows
-- Every row of one table in key order, to hash; {table} and {order_by} are identifiers from the file's own
-- catalogue, quoted by engine/store/ops.py (identifiers cannot be bound parameters).
SELECT * FROM {table} ORDER BY {order_by}

-- name: integrity_check
-- SQLite's full consistency check (pages and index contents); one row 'ok' when sound.
PRAGMA integrity_check

-- name: snapshot_companion
-- Who the file is: her name, birth facts and chart (the manifest's label).
SELECT name, birth_local, birth_tz, birth_place, chart_json FROM companion WHERE id = 1

-- name: snapshot_mood
-- Her current mood state as stored (JSON).
SELECT state_json FROM mood_state WHERE id = 1

-- name: snapshot_activity
-- What she is doing as of the snapshot (kind, label, since).
SELECT kind, label, started_at FROM activity WHERE status = 'current'

-- name: snapshot_chats
-- Chat messages, distinct turns and the newest message time.
SELECT count(*) AS messages, count(DISTINCT turn_id) AS turns, max(ts) AS last_ts FROM chat_message

-- name: snapshot_memories
-- Episodic memories, and how many wait for consolidation.
SELECT count(*) AS episodic, count(*) - count(consolidated_at) AS unconsolidated FROM mem_episodic

-- name: snapshot_facts
-- Facts still valid, and all facts ever recorded.
SELECT count(*) - count(valid_to) AS active, count(*) AS "all" FROM mem_semantic

-- name: snapshot_relations
-- Active relational entries, and all ever recorded.
SELECT coalesce(sum(status = 'active'), 0) AS active, count(*) AS "all" FROM mem_relational

-- name: snapshot_life
-- Her life events: how many, how many told, the newest time (counts only: untold text stays in the file).
SELECT count(*) AS events, coalesce(sum(told = 1), 0) AS told, max(ts) AS last_ts FROM life_event

-- name: journal_mode_delete
-- Rollback-journal mode: a snapshot or a restored copy is one self-contained file, no -wal or -shm beside it.
PRAGMA journal_mode = DELETE

-- name: journal_mode_wal
-- Back to WAL, the mode the daemon runs the file in (engine/store/connect.py).
PRAGMA journal_mode = WAL

-- name: schema_objects
-- Every schema object SQLite keeps the SQL of (engine/store/schema.py writes schema.sql from these).
SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL

-- name: schema_table_names
-- Every table name, virtual ones flagged: their shadow tables are SQLite's, not the schema's.
SELECT name, sql LIKE 'CREATE VIRTUAL TABLE%' AS is_virtual FROM sqlite_master WHERE type = 'table'

-- name: restore_checkpoint
-- Before a restore sets the old file aside: its WAL's committed frames into the file, the WAL cut to zero bytes.
PRAGMA wal_checkpoint(TRUNCATE)
