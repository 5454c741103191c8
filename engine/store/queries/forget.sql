-- Forget: remove turns and everything derived from them, inside one transaction (engine/memory/forget.py).

-- name: forget_secure_delete_state
-- Whether this connection zeroes deleted content (0 off, 1 on, 2 fast); restored after a forget.
PRAGMA secure_delete

-- name: forget_secure_delete_on
-- Deleted rows, freed pages and overflow chains are overwritten with zeros, not just unlinked.
PRAGMA secure_delete = ON

-- name: forget_secure_delete_off
-- Back to SQLite's default for everything that is not a forget.
PRAGMA secure_delete = OFF

-- name: forget_secure_delete_fast
-- The 'fast' setting (zero in-page content only), when the connection had it before.
PRAGMA secure_delete = FAST

-- name: forget_set_marker
-- The forget-in-progress marker the no-delete triggers check (migration 0007); cleared before commit.
INSERT INTO forget_in_progress (id, started_at) VALUES (1, :now)

-- name: forget_clear_marker
-- Every other delete is refused again once this runs (still inside the forget transaction).
DELETE FROM forget_in_progress

-- name: forget_turn_exists
-- Does any message of this turn exist (an unknown turn is a 404 / exit 2, not a silent no-op).
SELECT EXISTS (SELECT 1 FROM chat_message WHERE turn_id = :turn_id)

-- name: forget_turns_between
-- Every turn with a message said in [since, until) (chat time, Unix seconds).
SELECT DISTINCT turn_id FROM chat_message WHERE ts >= :since AND ts < :until ORDER BY turn_id

-- name: forget_all_turns
-- Every turn there is (anima forget --all).
SELECT DISTINCT turn_id FROM chat_message ORDER BY turn_id

-- name: forget_messages_of_turns
-- The messages of the turns to forget: their ids, and their text to find quotes of it elsewhere.
SELECT id, turn_id, role, text FROM chat_message WHERE turn_id IN (SELECT value FROM json_each(:turn_ids))

-- name: forget_memories_of_messages
-- The memory rows made from those messages.
SELECT id FROM mem_episodic WHERE message_id IN (SELECT value FROM json_each(:message_ids))

-- name: forget_facts_citing
-- Every fact, active or superseded (bitemporal history holds text too), with a forgotten memory as evidence.
SELECT id, subject, key, statement, evidence_json, valid_to, superseded_by FROM mem_semantic
WHERE EXISTS (SELECT 1 FROM json_each(evidence_json) j WHERE j.value IN (SELECT value FROM json_each(:ids)))
ORDER BY id

-- name: forget_relations_citing
-- Every relational entry whose evidence, or the evidence that ended it, includes a forgotten memory.
SELECT id, statement, status, evidence_json, ended_evidence_json, superseded_by FROM mem_relational
WHERE EXISTS (SELECT 1 FROM json_each(evidence_json) j WHERE j.value IN (SELECT value FROM json_each(:ids)))
   OR EXISTS (SELECT 1 FROM json_each(coalesce(ended_evidence_json, '[]')) j
              WHERE j.value IN (SELECT value FROM json_each(:ids)))
ORDER BY id

-- name: forget_evidence_episodes
-- The remaining evidence of an entry, oldest first: what a statement is rewritten from.
SELECT e.id, e.source, e.ts, e.raw, m.ts_iso FROM mem_episodic e
LEFT JOIN chat_message m ON m.id = e.message_id
WHERE e.id IN (SELECT value FROM json_each(:ids))
ORDER BY e.ts, e.id

-- name: forget_episode_vector
-- The stored passage vector of one memory: a rewritten fact takes its new source sentence's vector.
SELECT embedding FROM mem_embedding WHERE id = :id

-- name: forget_fact_vector_model
-- The model name on a fact's vector, kept when the vector is replaced.
SELECT model FROM mem_semantic_vec WHERE fact_id = :id

-- name: forget_rewrite_fact
-- A fact keeps its other evidence; its statement is rewritten by the host from that evidence.
UPDATE mem_semantic SET statement = :statement, evidence_json = :evidence_json WHERE id = :id

-- name: forget_delete_fact_vec
-- A fact's vector goes with the fact (or with the sentence it was the vector of).
DELETE FROM mem_semantic_vec WHERE fact_id = :id

-- name: forget_facts_superseded_by
-- Facts closed by this one: they must not point at a forgotten fact.
SELECT id, key FROM mem_semantic WHERE superseded_by = :id ORDER BY valid_from DESC, id DESC

-- name: forget_active_fact_of_key
-- The newest active fact of a lineage key other than those being forgotten: the successor to point at.
SELECT id FROM mem_semantic
WHERE key = :key AND key != 'none' AND valid_to IS NULL AND id NOT IN (SELECT value FROM json_each(:gone))
ORDER BY valid_from DESC, id DESC LIMIT 1

-- name: forget_repoint_fact
-- A closed fact now points at the lineage's current fact instead of the forgotten one that closed it.
UPDATE mem_semantic SET superseded_by = :superseded_by WHERE id = :id

-- name: forget_reopen_fact
-- What only a forgotten turn ended is true again, as if that turn had never been said.
UPDATE mem_semantic SET valid_to = NULL, superseded_by = NULL WHERE id = :id

-- name: forget_delete_fact
-- A fact whose only evidence was forgotten (allowed only under the forget marker).
DELETE FROM mem_semantic WHERE id = :id

-- name: forget_rewrite_relation
-- A relational entry keeps its other evidence; statement rewritten from it, forgotten lift evidence dropped.
UPDATE mem_relational SET statement = :statement, evidence_json = :evidence_json,
    ended_evidence_json = :ended_evidence_json
WHERE id = :id

-- name: forget_rewrite_relation_link
-- A forgotten entry stops pointing at its successor, so nothing references a row about to go.
UPDATE mem_relational SET superseded_by = NULL WHERE id = :id

-- name: forget_relations_superseded_by
-- Relational entries closed by this one.
SELECT id FROM mem_relational WHERE superseded_by = :id

-- name: forget_reopen_relation
-- An entry only a forgotten turn ended (superseded or lifted) is active again.
UPDATE mem_relational SET status = 'active', valid_to = NULL, superseded_by = NULL, ended_evidence_json = NULL
WHERE id = :id

-- name: forget_delete_relation
-- A relational entry whose only evidence was forgotten (allowed only under the forget marker).
DELETE FROM mem_relational WHERE id = :id

-- name: forget_delete_injections
-- Injection records of the turns, or that quoted a forgotten memory, an affected fact, or a forgotten text.
DELETE FROM context_injection
WHERE turn_id IN (SELECT value FROM json_each(:turn_ids))
   OR EXISTS (SELECT 1 FROM json_each(memory_ids_json) j WHERE j.value IN (SELECT value FROM json_each(:memory_ids)))
   OR EXISTS (SELECT 1 FROM json_each(fact_ids_json) j WHERE j.value IN (SELECT value FROM json_each(:fact_ids)))
   OR EXISTS (SELECT 1 FROM json_each(:texts) t WHERE instr(block_text, t.value) > 0)

-- name: forget_delete_offers
-- Share offers made in, or receipted by, a forgotten turn.
DELETE FROM share_offer
WHERE turn_id IN (SELECT value FROM json_each(:turn_ids)) OR receipt_turn_id IN (SELECT value FROM json_each(:turn_ids))

-- name: forget_unlink_told_turn
-- She did tell the event (it stays told); the forgotten turn it was told in is no longer named.
UPDATE life_event SET told_turn_id = NULL WHERE told_turn_id IN (SELECT value FROM json_each(:turn_ids))

-- name: forget_job_texts
-- The job fields that could hold text (payload, scratch, result, error), for the scrub in Python.
SELECT id, payload_json, scratch_json, result_json, error FROM job

-- name: forget_scrub_job
-- One job's fields that held a forgotten text, emptied (the others passed through unchanged).
UPDATE job SET payload_json = :payload_json, scratch_json = :scratch_json, result_json = :result_json,
    error = :error
WHERE id = :id

-- name: forget_job_event_texts
-- Job history details, for the same scrub.
SELECT id, detail_json FROM job_event

-- name: forget_scrub_job_event
-- A job history detail that held a forgotten text is emptied (the event itself stays).
UPDATE job_event SET detail_json = '{}' WHERE id = :id

-- name: forget_delete_fts
-- The keyword rows (the index keeps delete markers until forget_fts_optimize rewrites its segments).
DELETE FROM mem_fts WHERE rowid IN (SELECT value FROM json_each(:ids))

-- name: forget_delete_embeddings
-- The exact float vectors of the memories.
DELETE FROM mem_embedding WHERE id IN (SELECT value FROM json_each(:ids))

-- name: forget_delete_vec
-- One memory's sqlite-vec row (vec0 deletes one rowid per statement).
DELETE FROM mem_vec WHERE rowid = :id

-- name: forget_delete_memories
-- The memory rows (allowed only under the forget marker).
DELETE FROM mem_episodic WHERE id IN (SELECT value FROM json_each(:ids))

-- name: forget_delete_messages
-- The messages themselves (allowed only under the forget marker).
DELETE FROM chat_message WHERE id IN (SELECT value FROM json_each(:ids))

-- name: forget_fts_optimize
-- Merge every FTS5 segment into one: deleted terms leave the b-trees and vocabulary, old pages are freed.
INSERT INTO mem_fts (mem_fts) VALUES ('optimize')

-- name: forget_generation
-- How many forgets this file has seen: part of the in-RAM caches' fingerprints (vectors, fact matrix),
-- because a forget can remove rows below the max id and free ids for reuse, which counts and max ids miss.
SELECT count(*) FROM event_log WHERE kind = 'forget'

-- name: forget_checkpoint
-- Copy the WAL into the file and truncate it to zero bytes, so no old frame keeps forgotten pages.
PRAGMA wal_checkpoint(TRUNCATE)
