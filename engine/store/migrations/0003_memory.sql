-- 0003_memory: the exact float vectors in a plain table, keyed by mem_episodic.id.
-- Recall rescoring and the in-process binary index (engine/memory/vector_index.py) read vectors by id:
-- 200 rows from this table take ~1 ms, from the vec0 table ~100 ms. Derived data like mem_vec, rebuilt
-- by `anima reembed`.
CREATE TABLE mem_embedding (
    id          INTEGER PRIMARY KEY,          -- = mem_episodic.id
    embedding   BLOB NOT NULL                 -- float32 little-endian, L2-normalised
);

INSERT INTO mem_embedding (id, embedding) SELECT rowid, embedding FROM mem_vec;
