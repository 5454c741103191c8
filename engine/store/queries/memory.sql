-- Memory queries: chat messages, episodic rows, FTS/vector lanes, re-read, injections, embedding model.

-- name: mem_get_embedding_model
-- The model every stored vector comes from (one row), none before the first vector.
SELECT name, dim FROM embedding_model WHERE id = 1

-- name: mem_set_embedding_model
-- Record the model (first use, or after anima reembed switched to another).
INSERT INTO embedding_model (id, name, dim, updated_at) VALUES (1, :name, :dim, :now)
ON CONFLICT (id) DO UPDATE SET name = excluded.name, dim = excluded.dim, updated_at = excluded.updated_at

-- name: mem_get_message
-- One side of a turn as stored: a replay of the same text is idempotent, a different text a conflict.
SELECT id, turn_id, role, text, ts, ts_iso, status FROM chat_message WHERE turn_id = :turn_id AND role = :role

-- name: mem_insert_message
-- A new chat message, sent; its id.
INSERT INTO chat_message (turn_id, role, text, ts, ts_iso, status, origin, created_at)
VALUES (:turn_id, :role, :text, :ts, :ts_iso, 'sent', :origin, :now)
RETURNING id

-- name: mem_insert_episodic_chat
-- The memory row of one chat message (echo_of_injection set when the reply repeats a block).
INSERT INTO mem_episodic (source, message_id, turn_id, role, ts, raw, salience, importance, echo_of_injection, created_at)
VALUES ('chat', :message_id, :turn_id, :role, :ts, :raw, :salience, :importance, :echo, :now)
RETURNING id

-- name: mem_insert_episodic_life
-- The memory row of a told life event, once per event (a second insert is a no-op).
INSERT INTO mem_episodic (source, life_event_id, ts, raw, salience, importance, created_at)
VALUES ('self_life', :life_event_id, :ts, :raw, :salience, :importance, :now)
ON CONFLICT DO NOTHING
RETURNING id

-- name: mem_episodic_for_life
-- The memory row already made from a life event, if any.
SELECT id FROM mem_episodic WHERE life_event_id = :life_event_id

-- name: mem_get_life_event
-- A life event and whether she told it (only told life becomes a memory).
SELECT id, ts, text, told FROM life_event WHERE id = :id

-- name: mem_insert_fts
-- The keyword row of a memory: its tokens (jieba words + CJK bigrams), space-separated.
INSERT INTO mem_fts (rowid, tokens) VALUES (:id, :tokens)

-- name: mem_insert_vec
-- A memory's row in the sqlite-vec lane (exact cosine scan on small histories).
INSERT INTO mem_vec (rowid, embedding) VALUES (:id, :embedding)

-- name: mem_create_vocab
-- Per-connection (temp) view of mem_fts document frequencies, to drop very common query terms on big histories.
CREATE VIRTUAL TABLE IF NOT EXISTS temp.mem_fts_vocab USING fts5vocab(main, mem_fts, row)

-- name: mem_term_doc_count
-- How many memories hold one term (mem_create_vocab first); a term not found returns no row.
SELECT doc FROM temp.mem_fts_vocab WHERE term = :term

-- name: mem_embeddings_after
-- Every stored vector above an id, by id: the RAM index loads or extends itself from these.
SELECT id, embedding FROM mem_embedding WHERE id > :after ORDER BY id

-- name: mem_count_embeddings_after
-- How many memory vectors lie above an id: the RAM index sizes its matrix once before loading them.
SELECT count(*) FROM mem_embedding WHERE id > :after

-- name: mem_max_embedding_id
-- The highest memory id with a vector, 0 when none: the RAM index's high-water mark.
SELECT coalesce(max(id), 0) FROM mem_embedding

-- name: mem_get_embedding_stamp
-- The model and when it was set: a change rebuilds the RAM index.
SELECT name, dim, updated_at FROM embedding_model WHERE id = 1

-- name: mem_delete_embeddings
-- Every plain vector (anima reembed, inside its transaction, before writing the new ones).
DELETE FROM mem_embedding

-- name: mem_max_id
-- The highest memory id, 0 when none (which lane to use, the indexer's watermark, forget's report).
SELECT coalesce(max(id), 0) FROM mem_episodic

-- name: mem_vec_knn
-- The k nearest memories by cosine distance in sqlite-vec's vec0 table (exact scan).
SELECT rowid AS id, distance FROM mem_vec WHERE embedding MATCH :embedding AND k = :k ORDER BY distance

-- name: mem_fts_search
-- The k best memories for an FTS5 MATCH expression, by BM25 (the keyword lane).
SELECT rowid AS id, bm25(mem_fts) AS rank FROM mem_fts WHERE mem_fts MATCH :match ORDER BY rank LIMIT :k

-- name: mem_gated_rows
-- The source gate: chat rows whose message exists and was sent, told self_life rows; never echoes of
-- injected text; never anything after as_of. Everything recall may show passes through here.
SELECT e.id, e.source, e.message_id, e.life_event_id, e.turn_id, e.role, e.ts, e.raw, e.gist, e.salience,
       e.importance, e.accessibility, e.recall_count, e.last_recalled_at,
       m.ts_iso AS ts_iso
FROM mem_episodic e
LEFT JOIN chat_message m ON m.id = e.message_id
LEFT JOIN life_event l ON l.id = e.life_event_id
WHERE e.id IN (SELECT value FROM json_each(:ids))
  AND e.echo_of_injection IS NULL
  AND e.ts <= :as_of
  AND ((e.source = 'chat' AND m.id IS NOT NULL AND m.status = 'sent')
       OR (e.source = 'self_life' AND l.id IS NOT NULL AND l.told = 1))

-- name: mem_turn_messages
-- The sent messages of one turn as of a time, user side first (the context block's re-read).
SELECT id, role, text, ts, ts_iso FROM chat_message
WHERE turn_id = :turn_id AND status = 'sent' AND ts <= :as_of
ORDER BY CASE role WHEN 'user' THEN 0 ELSE 1 END

-- name: mem_vectors_of
-- The vectors of given memories: rescoring keyword-only candidates, the time lane, late RAM rows.
SELECT id, embedding FROM mem_embedding WHERE id IN (SELECT value FROM json_each(:ids))

-- name: mem_insert_embedding
-- A memory's plain float32 vector (rescoring and the RAM index); replaced on re-index.
INSERT OR REPLACE INTO mem_embedding (id, embedding) VALUES (:id, :embedding)

-- name: mem_strength_of
-- What the spaced-repetition step needs of one memory.
SELECT ts, accessibility, last_recalled_at FROM mem_episodic WHERE id = :id

-- name: mem_bump_recall
-- One use of a memory: count it and store its new strength.
UPDATE mem_episodic SET recall_count = recall_count + 1, accessibility = :accessibility, last_recalled_at = :now
WHERE id = :id

-- name: mem_insert_injection
-- One context block handed out: its hashes, size, cited ids and text (anti-loop and use record).
INSERT INTO context_injection (id, ts, turn_id, query_hash, block_hash, block_chars, memory_ids_json, fact_ids_json, block_text)
VALUES (:id, :ts, :turn_id, :query_hash, :block_hash, :block_chars, :memory_ids_json, :fact_ids_json, :block_text)

-- name: mem_injections_for_turn
-- The blocks handed out for one turn, newest first: what its reply may echo.
SELECT id, block_text, memory_ids_json FROM context_injection WHERE turn_id = :turn_id ORDER BY ts DESC

-- name: mem_injection_by_id
-- One injection and whether (and by which turn) its block was already used; for a turn that names it.
SELECT id, turn_id, memory_ids_json, used_turn_id, used_at FROM context_injection WHERE id = :id

-- name: mem_newest_injection_for_turn
-- The last block asked for this turn_id (a front end that retried /v1/context used the last answer).
SELECT id, turn_id, memory_ids_json, used_turn_id, used_at FROM context_injection
WHERE turn_id = :turn_id ORDER BY ts DESC, rowid DESC LIMIT 1

-- name: mem_injections_used_by_turn
-- Whether this turn already confirmed a block: a replay confirms nothing more.
SELECT id FROM context_injection WHERE used_turn_id = :turn_id LIMIT 1

-- name: mem_mark_injection_used
-- Confirm one block as used by a turn, once: no row comes back when it was already confirmed.
UPDATE context_injection SET used_turn_id = :turn_id, used_at = :now
WHERE id = :id AND used_at IS NULL
RETURNING memory_ids_json

-- name: mem_recent_injections
-- The newest blocks of the last day, when the turn had none of its own (a reply may echo them).
SELECT id, block_text, memory_ids_json FROM context_injection WHERE ts >= :since ORDER BY ts DESC LIMIT :limit

-- name: mem_all_episodic_for_reembed
-- Every memory's text, by id: anima reembed embeds them all again.
SELECT e.id, e.raw FROM mem_episodic e ORDER BY e.id

-- name: mem_drop_mem_vec
-- Drop the sqlite-vec table (anima reembed recreates it for the new model's dimension).
DROP TABLE IF EXISTS mem_vec

-- name: mem_create_mem_vec
-- {dim} is filled with the model's integer dimension by engine.memory.reembed (the one formatted query).
CREATE VIRTUAL TABLE mem_vec USING vec0(embedding float[{dim}] distance_metric=cosine)

-- name: mem_pending_vectors
-- Memories with no vector yet (written with embed=False), oldest first; engine/memory/indexer.py embeds them.
SELECT e.id, e.raw FROM mem_episodic e
WHERE e.id > :after AND NOT EXISTS (SELECT 1 FROM mem_embedding v WHERE v.id = e.id)
ORDER BY e.id LIMIT :limit

-- name: mem_count_pending_vectors
-- How many memories above an id wait for a vector (GET /v1/health vectors_pending).
SELECT count(*) FROM mem_episodic e
WHERE e.id > :after AND NOT EXISTS (SELECT 1 FROM mem_embedding v WHERE v.id = e.id)

-- name: mem_pending_ids_between
-- The memory ids in (after, upto] still without a vector: the RAM index fills them in later.
SELECT e.id FROM mem_episodic e
WHERE e.id > :after AND e.id <= :upto AND NOT EXISTS (SELECT 1 FROM mem_embedding v WHERE v.id = e.id)

-- name: mem_has_vector
-- Whether a memory still exists and already has a vector (the indexer skips both cases).
SELECT EXISTS (SELECT 1 FROM mem_embedding WHERE id = :id) AS has_vector,
       EXISTS (SELECT 1 FROM mem_episodic WHERE id = :id) AS has_memory

-- name: mem_delete_vec
-- One memory's sqlite-vec row (a stray one would make the indexer's insert fail).
DELETE FROM mem_vec WHERE rowid = :id

-- name: mem_fresh_pending_vectors
-- The newest memories still without a vector, written since :since, among the top :scan ids (so the
-- anti-join stays a few hundred rows at any history size): /v1/context embeds these itself (read-your-writes).
-- The user's side of each turn first: the re-read brings her reply back with it.
SELECT e.id, e.raw FROM mem_episodic e
WHERE e.id > (SELECT coalesce(max(id), 0) FROM mem_episodic) - :scan
  AND e.created_at >= :since
  AND NOT EXISTS (SELECT 1 FROM mem_embedding v WHERE v.id = e.id)
ORDER BY e.role IS 'companion', e.id DESC LIMIT :limit

-- name: mem_turns_messages
-- The sent messages of several turns in one statement (the context block re-reads each hit's whole turn), user side first.
SELECT turn_id, id, role, text, ts, ts_iso FROM chat_message
WHERE turn_id IN (SELECT value FROM json_each(:turn_ids)) AND status = 'sent' AND ts <= :as_of
ORDER BY turn_id, CASE role WHEN 'user' THEN 0 ELSE 1 END
