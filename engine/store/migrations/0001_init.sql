-- 0001_init: every table of one companion's file. Times are REAL Unix seconds (UTC) unless the
-- column name ends in _iso. Later migrations add; none drops or rewrites user rows.

-- Who she is. One companion per file; birth facts and chart are immutable once written.
CREATE TABLE companion (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    name            TEXT NOT NULL,
    birth_local     TEXT NOT NULL,            -- 'YYYY-MM-DD HH:MM' as given, in birth_tz
    birth_tz        TEXT NOT NULL,            -- IANA zone, e.g. Asia/Shanghai
    birth_utc       REAL NOT NULL,            -- the birth instant
    birth_place     TEXT,
    bazi_sect       INTEGER NOT NULL,         -- lunar-python sect used for 23:00-23:59 births
    chart_json      TEXT NOT NULL,            -- Four Pillars chart (engine.bazi)
    persona_json    TEXT NOT NULL DEFAULT '{}', -- derived from the chart by engine.persona; may be re-derived
    created_at      REAL NOT NULL
);

CREATE TRIGGER companion_birth_immutable
BEFORE UPDATE OF birth_local, birth_tz, birth_utc, birth_place, bazi_sect, chart_json, created_at ON companion
BEGIN
    SELECT RAISE(ABORT, 'companion birth facts and chart are immutable');
END;

CREATE TRIGGER companion_undeletable
BEFORE DELETE ON companion
BEGIN
    SELECT RAISE(ABORT, 'companion birth facts and chart are immutable');
END;

-- Daemon lifecycle, gaps, recoveries and control changes. Append-only.
CREATE TABLE event_log (
    id          INTEGER PRIMARY KEY,
    ts          REAL NOT NULL,
    kind        TEXT NOT NULL,                -- start, stop, gap, recovery, control, clock_backwards, ...
    detail_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX event_log_kind_ts ON event_log(kind, ts);

CREATE TRIGGER event_log_append_only_update BEFORE UPDATE ON event_log
BEGIN SELECT RAISE(ABORT, 'event_log is append-only'); END;
CREATE TRIGGER event_log_append_only_delete BEFORE DELETE ON event_log
BEGIN SELECT RAISE(ABORT, 'event_log is append-only'); END;

-- Liveness of the daemon that owns the file: one row, rewritten every heartbeat.
CREATE TABLE daemon_state (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    pid             INTEGER,
    started_at      REAL,
    last_beat_at    REAL,                     -- her clock (may be injected in tests)
    last_beat_wall  REAL,                     -- the wall clock, for "is the process alive"
    beats           INTEGER NOT NULL DEFAULT 0,
    loop_lag_ms     REAL,
    stopped_at      REAL
);

-- Runtime switches; keys are validated against engine.control.REGISTRY before any write.
CREATE TABLE life_control (
    key         TEXT PRIMARY KEY,
    value_json  TEXT NOT NULL,
    updated_at  REAL NOT NULL
);

-- Her mood and energy state: one row. The JSON holds engine.mood/engine.energy state verbatim.
CREATE TABLE mood_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    state_json  TEXT NOT NULL,
    updated_at  REAL NOT NULL
);

-- A bounded trace for plots: one point per bucket (see config [mood] trace_*).
CREATE TABLE mood_trace (
    ts          REAL PRIMARY KEY,
    v           REAL NOT NULL,
    a           REAL NOT NULL,
    d           REAL NOT NULL,
    e           REAL NOT NULL,
    activity    TEXT
);

-- The continuous record of what she is doing. Exactly one row has status 'current'.
CREATE TABLE activity (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL,            -- catalogue key (engine/data/activities.toml)
    label           TEXT NOT NULL,            -- Chinese label shown to people
    started_at      REAL NOT NULL,
    expected_end    REAL NOT NULL,
    ended_at        REAL,
    why             TEXT NOT NULL,            -- motive: tired, hungry, curious, lonely, routine, low_mood ...
    next_kind       TEXT,
    status          TEXT NOT NULL CHECK (status IN ('current', 'suspended', 'done', 'abandoned')),
    interrupted_by  TEXT,                     -- turn id of the chat that suspended it
    remaining_s     REAL,                     -- time left when suspended
    detail_json     TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX activity_one_current ON activity(status) WHERE status = 'current';
CREATE INDEX activity_started ON activity(started_at);

-- Her own life. told=0 rows never leave the daemon through a public path except as one share offer.
CREATE TABLE life_event (
    id              INTEGER PRIMARY KEY,
    ts              REAL NOT NULL,
    activity_id     INTEGER REFERENCES activity(id),
    kind            TEXT NOT NULL,            -- completed, resumed, abandoned, backstory, gap ...
    text            TEXT NOT NULL,
    told            INTEGER NOT NULL DEFAULT 0 CHECK (told IN (0, 1)),
    told_at         REAL,
    told_turn_id    TEXT,
    origin          TEXT NOT NULL DEFAULT 'life'   -- life (heartbeat), backstory (anima life add)
);
CREATE INDEX life_event_ts ON life_event(ts);
CREATE INDEX life_event_told ON life_event(told, ts);

-- Every message said: the raw source of truth, never rewritten.
CREATE TABLE chat_message (
    id          INTEGER PRIMARY KEY,
    turn_id     TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('user', 'companion')),
    text        TEXT NOT NULL,
    ts          REAL NOT NULL,
    ts_iso      TEXT NOT NULL,                -- as the caller sent it, with its offset
    status      TEXT NOT NULL DEFAULT 'sent' CHECK (status IN ('sent', 'draft', 'retracted')),
    origin      TEXT NOT NULL DEFAULT 'api',  -- api, import
    created_at  REAL NOT NULL,
    UNIQUE (turn_id, role)
);
CREATE INDEX chat_message_ts ON chat_message(ts);

CREATE TRIGGER chat_message_text_immutable BEFORE UPDATE OF text, turn_id, role, ts ON chat_message
BEGIN SELECT RAISE(ABORT, 'chat_message is never rewritten'); END;

-- One remembered message or told life event.
CREATE TABLE mem_episodic (
    id                  INTEGER PRIMARY KEY,
    source              TEXT NOT NULL CHECK (source IN ('chat', 'self_life')),
    message_id          INTEGER REFERENCES chat_message(id),
    life_event_id       INTEGER REFERENCES life_event(id),
    turn_id             TEXT,
    role                TEXT,
    ts                  REAL NOT NULL,
    raw                 TEXT NOT NULL,
    gist                TEXT,
    salience            REAL NOT NULL DEFAULT 0.5,
    importance          REAL NOT NULL DEFAULT 5,   -- 1..10, ranking multiplier
    accessibility       REAL NOT NULL DEFAULT 1.0, -- strength; grows with use (spaced repetition)
    recall_count        INTEGER NOT NULL DEFAULT 0,
    last_recalled_at    REAL,
    echo_of_injection   TEXT,                      -- injection id this text echoes (anti-loop), else NULL
    consolidated_at     REAL,
    created_at          REAL NOT NULL,
    CHECK ((source = 'chat' AND message_id IS NOT NULL) OR (source = 'self_life' AND life_event_id IS NOT NULL))
);
CREATE UNIQUE INDEX mem_episodic_message ON mem_episodic(message_id) WHERE message_id IS NOT NULL;
CREATE UNIQUE INDEX mem_episodic_life ON mem_episodic(life_event_id) WHERE life_event_id IS NOT NULL;
CREATE INDEX mem_episodic_unconsolidated ON mem_episodic(consolidated_at) WHERE consolidated_at IS NULL;

-- Keywords: segmented text (jieba words + CJK bigrams + ASCII words), rowid = mem_episodic.id.
CREATE VIRTUAL TABLE mem_fts USING fts5(tokens, tokenize = 'unicode61 remove_diacritics 2');

-- Vectors: rowid = mem_episodic.id. Rebuilt (not migrated) by `anima reembed` when the model changes.
CREATE VIRTUAL TABLE mem_vec USING vec0(embedding float[384] distance_metric=cosine);

-- Which embedding model produced mem_vec.
CREATE TABLE embedding_model (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    name        TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    updated_at  REAL NOT NULL
);

-- What was injected into which turn: the anti-loop record.
CREATE TABLE context_injection (
    id              TEXT PRIMARY KEY,         -- injection id handed to the front end
    ts              REAL NOT NULL,
    turn_id         TEXT,
    query_hash      TEXT NOT NULL,
    block_hash      TEXT NOT NULL,
    block_chars     INTEGER NOT NULL,
    memory_ids_json TEXT NOT NULL DEFAULT '[]',
    fact_ids_json   TEXT NOT NULL DEFAULT '[]',
    block_text      TEXT NOT NULL             -- kept so echoes can be recognised; never recalled itself
);
CREATE INDEX context_injection_ts ON context_injection(ts);

-- Stable facts, bitemporal: superseding closes valid_to; nothing is deleted.
CREATE TABLE mem_semantic (
    id              INTEGER PRIMARY KEY,
    subject         TEXT NOT NULL DEFAULT 'user',
    key             TEXT NOT NULL DEFAULT 'none',   -- lineage key: home, job, pet:芝麻, ...
    statement       TEXT NOT NULL,
    valid_from      REAL NOT NULL,
    valid_to        REAL,
    recorded_at     REAL NOT NULL,
    superseded_by   INTEGER REFERENCES mem_semantic(id),
    evidence_json   TEXT NOT NULL DEFAULT '[]',      -- mem_episodic ids
    importance      REAL NOT NULL DEFAULT 5,
    origin          TEXT NOT NULL DEFAULT 'consolidation',
    pinned          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX mem_semantic_active ON mem_semantic(key) WHERE valid_to IS NULL;
CREATE TRIGGER mem_semantic_no_delete BEFORE DELETE ON mem_semantic
BEGIN SELECT RAISE(ABORT, 'facts are never deleted; supersede them'); END;

CREATE TABLE mem_relational (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('ritual', 'nickname', 'inside_joke', 'pattern', 'taboo')),
    statement       TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded')),
    valid_from      REAL NOT NULL,
    valid_to        REAL,
    recorded_at     REAL NOT NULL,
    superseded_by   INTEGER REFERENCES mem_relational(id),
    evidence_json   TEXT NOT NULL DEFAULT '[]'
);
CREATE TRIGGER mem_relational_no_delete BEFORE DELETE ON mem_relational
BEGIN SELECT RAISE(ABORT, 'relational entries are never deleted; supersede them'); END;

-- Leased background work (procrastinate-style explicit states).
CREATE TABLE job (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL,
    payload_json    TEXT NOT NULL DEFAULT '{}',
    status          TEXT NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'running', 'done', 'failed', 'interrupted')),
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
CREATE INDEX job_ready ON job(status, run_after);

CREATE TABLE job_event (
    id          INTEGER PRIMARY KEY,
    job_id      INTEGER NOT NULL REFERENCES job(id),
    ts          REAL NOT NULL,
    attempt     INTEGER NOT NULL,
    event       TEXT NOT NULL,                -- queued, claimed, done, failed, interrupted, retried
    detail_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX job_event_job ON job_event(job_id, ts);

-- The sharing channel: at most one offered untold life event per request, told only on receipt.
CREATE TABLE share_offer (
    id              TEXT PRIMARY KEY,
    life_event_id   INTEGER NOT NULL REFERENCES life_event(id),
    turn_id         TEXT,
    offered_at      REAL NOT NULL,
    expires_at      REAL NOT NULL,
    status          TEXT NOT NULL DEFAULT 'offered' CHECK (status IN ('offered', 'received', 'expired')),
    receipt_turn_id TEXT,
    received_at     REAL
);
CREATE INDEX share_offer_event ON share_offer(life_event_id);
