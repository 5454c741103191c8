-- Core queries: companion, event log, daemon liveness, life_control.

-- name: insert_companion
-- Create her one companion row (id 1): name, birth facts, chart and persona, read-only after this.
-- Her uid (engine/store/migrations/0014) is made here, once: random, never changed, carried by every copy.
INSERT INTO companion (id, name, birth_local, birth_tz, birth_utc, birth_place, bazi_sect, chart_json, persona_json, created_at, uid)
VALUES (1, :name, :birth_local, :birth_tz, :birth_utc, :birth_place, :bazi_sect, :chart_json, :persona_json, :created_at,
        lower(hex(randomblob(16))))

-- name: get_companion
-- Her companion row (id 1), or nothing before anima init.
SELECT * FROM companion WHERE id = 1

-- name: set_companion_handle
-- The id she is served under in a companions directory (the file's stem); written by `anima init --dir`.
UPDATE companion SET handle = :handle WHERE id = 1

-- name: set_companion_home
-- Where she lives and what she does (engine/store/migrations/0016): her city, its zone and her role id.
UPDATE companion SET home_city = :home_city, home_tz = :home_tz, work_role = :work_role WHERE id = 1

-- name: insert_event
-- Append one daemon lifecycle event (start, stop, gap, recovery, control change) to the event log.
INSERT INTO event_log (ts, kind, detail_json) VALUES (:ts, :kind, :detail_json)

-- name: events_of_kind
-- Every event of one kind, oldest first.
SELECT * FROM event_log WHERE kind = :kind ORDER BY id

-- name: get_daemon_state
-- The liveness row: pid, start, last beat (her time and wall time), beats, loop lag.
SELECT * FROM daemon_state WHERE id = 1

-- name: daemon_started
-- Reset the liveness row for a daemon that just started.
INSERT INTO daemon_state (id, pid, started_at, last_beat_at, last_beat_wall, beats, loop_lag_ms, stopped_at)
VALUES (1, :pid, :now, :now, :wall, 0, 0, NULL)
ON CONFLICT (id) DO UPDATE SET pid = :pid, started_at = :now, last_beat_at = :now, last_beat_wall = :wall,
    beats = 0, loop_lag_ms = 0, stopped_at = NULL

-- name: daemon_beat
-- Record one heartbeat: when (her time and wall time), the count, the loop lag.
UPDATE daemon_state SET last_beat_at = :now, last_beat_wall = :wall, beats = beats + 1, loop_lag_ms = :lag_ms
WHERE id = 1

-- name: daemon_stopped
-- Record a clean stop, so the next start can tell a stop from a crash.
UPDATE daemon_state SET stopped_at = :now, last_beat_at = :now, last_beat_wall = :wall WHERE id = 1

-- name: all_controls
-- Every stored runtime switch (life_control) with its JSON value.
SELECT key, value_json, updated_at FROM life_control

-- name: upsert_control
-- Set one runtime switch, creating it on first use.
INSERT INTO life_control (key, value_json, updated_at) VALUES (:key, :value_json, :now)
ON CONFLICT (key) DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at
