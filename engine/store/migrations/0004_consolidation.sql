-- 0004_consolidation: what consolidation needs beyond 0001: fact vectors and the model operator's daily budget.

-- One vector per fact (rowid-aligned with mem_semantic), for the operator's similarity and for
-- facts joining recall. A plain BLOB table, not vec0: facts are few (thousands at most), numpy
-- scans them in microseconds, and the table does not care about the embedding dimension.
CREATE TABLE mem_semantic_vec (
    fact_id     INTEGER PRIMARY KEY REFERENCES mem_semantic(id),
    model       TEXT NOT NULL,
    embedding   BLOB NOT NULL
);

-- The model operator's spend per UTC day, so the [consolidation] model_daily_* budget holds across restarts.
CREATE TABLE model_usage (
    day         TEXT PRIMARY KEY,             -- 'YYYY-MM-DD' (UTC)
    calls       INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    updated_at  REAL NOT NULL
);

CREATE INDEX mem_semantic_valid ON mem_semantic(valid_from, valid_to);
CREATE INDEX job_kind_status ON job(kind, status);
