-- Consolidation: unconsolidated episodes in, bitemporal facts out (engine/consolidate/).

-- name: unconsolidated_episodes
-- Everything not yet looked at, with what the gate needs: message status/origin, life event told.
SELECT e.id, e.source, e.role, e.raw, e.ts, e.salience, e.importance, e.echo_of_injection,
       m.ts_iso AS ts_iso, m.status AS message_status, m.origin AS message_origin, l.told AS told
FROM mem_episodic e
LEFT JOIN chat_message m ON m.id = e.message_id
LEFT JOIN life_event l ON l.id = e.life_event_id
WHERE e.consolidated_at IS NULL
ORDER BY e.ts, e.id
LIMIT :limit

-- name: count_unconsolidated
-- How many episodes wait for consolidation (the scheduler's backlog).
SELECT count(*) FROM mem_episodic WHERE consolidated_at IS NULL

-- name: episode_vectors
-- The vectors of the given episode ids (a JSON array), for the operator's similarity.
SELECT rowid AS id, embedding FROM mem_vec WHERE rowid IN (SELECT value FROM json_each(:ids))

-- name: mark_consolidated
-- Mark the given episodes (a JSON array of ids) as looked at by this run.
UPDATE mem_episodic SET consolidated_at = :now
WHERE id IN (SELECT value FROM json_each(:ids)) AND consolidated_at IS NULL

-- name: active_facts
-- Every fact still valid, with its vector, for planning a run.
SELECT s.*, v.embedding AS embedding, v.model AS vec_model
FROM mem_semantic s LEFT JOIN mem_semantic_vec v ON v.fact_id = s.id
WHERE s.valid_to IS NULL
ORDER BY s.id

-- name: active_fact_ids
-- The commit-time check: only ids, read under the write lock (active_facts carries every vector).
SELECT id FROM mem_semantic WHERE valid_to IS NULL ORDER BY id

-- name: active_relation_ids
-- The commit-time check for relational entries: ids of the active ones only.
SELECT id FROM mem_relational WHERE status = 'active' ORDER BY id

-- name: facts_as_of
-- What was true at :as_of (valid time): begun by then and not yet ended.
SELECT s.*, v.embedding AS embedding
FROM mem_semantic s LEFT JOIN mem_semantic_vec v ON v.fact_id = s.id
WHERE s.valid_from <= :as_of AND (s.valid_to IS NULL OR s.valid_to > :as_of)
ORDER BY s.id

-- name: all_facts
-- Every fact ever recorded, retired ones included (fact recall with its history).
SELECT * FROM mem_semantic ORDER BY id

-- name: insert_fact
-- Add one fact with its evidence; returns its id.
INSERT INTO mem_semantic (subject, key, statement, valid_from, valid_to, recorded_at, superseded_by,
                          evidence_json, importance, origin)
VALUES (:subject, :key, :statement, :valid_from, :valid_to, :recorded_at, :superseded_by,
        :evidence_json, :importance, :origin)
RETURNING id

-- name: insert_fact_vec
-- Store (or replace) a fact's vector and the model that made it.
INSERT OR REPLACE INTO mem_semantic_vec (fact_id, model, embedding) VALUES (:fact_id, :model, :embedding)

-- name: merge_into_fact
-- Fold new evidence into an active fact (importance only rises).
UPDATE mem_semantic SET evidence_json = :evidence_json, importance = max(importance, :importance)
WHERE id = :id AND valid_to IS NULL

-- name: retire_fact
-- Close an active fact: valid until :valid_to, superseded by :superseded_by; never deleted.
UPDATE mem_semantic SET valid_to = :valid_to, superseded_by = :superseded_by
WHERE id = :id AND valid_to IS NULL

-- name: close_new_fact
-- Close a fact this same run added (a later candidate in the batch superseded it).
UPDATE mem_semantic SET valid_to = :valid_to, superseded_by = :superseded_by WHERE id = :id

-- name: count_facts
-- How many facts exist, and how many are active.
SELECT count(*) AS total, sum(CASE WHEN valid_to IS NULL THEN 1 ELSE 0 END) AS active FROM mem_semantic

-- name: fact_evidence_turns
-- The turns behind the given evidence memory ids (a JSON array), oldest first.
SELECT e.id AS memory_id, e.turn_id, e.ts, e.source FROM mem_episodic e
WHERE e.id IN (SELECT value FROM json_each(:ids))
ORDER BY e.ts

-- name: evidence_messages
-- Both sent sides of one evidence turn, the user's first: the source the host writes a fact from.
SELECT role, text, ts, ts_iso FROM chat_message
WHERE turn_id = :turn_id AND status = 'sent'
ORDER BY CASE role WHEN 'user' THEN 0 ELSE 1 END

-- name: get_model_usage
-- The model operator's calls and tokens spent on one UTC day.
SELECT calls, tokens FROM model_usage WHERE day = :day

-- name: add_model_usage
-- Add calls and tokens to one UTC day's model spend.
INSERT INTO model_usage (day, calls, tokens, updated_at) VALUES (:day, :calls, :tokens, :now)
ON CONFLICT (day) DO UPDATE SET calls = calls + excluded.calls, tokens = tokens + excluded.tokens,
    updated_at = excluded.updated_at

-- name: fact_evidence
-- One fact's evidence ids (JSON), to merge more into.
SELECT evidence_json FROM mem_semantic WHERE id = :id

-- name: facts_version
-- A cheap fingerprint of what fact recall caches (index-only, ~0.2 ms at 4,400 facts): facts are
-- append-only and change only by closing valid_to, and a vector is written with its new fact, so
-- count, max ids and the sum of valid_to move on every change that matters. (count(*) over the
-- vector table would scan its blobs: 1.6 ms; max(fact_id) is a rowid lookup.)
SELECT (SELECT count(*) FROM mem_semantic) AS facts, (SELECT max(id) FROM mem_semantic) AS max_id,
       (SELECT total(valid_to) FROM mem_semantic) AS closed_sum,
       (SELECT max(fact_id) FROM mem_semantic_vec) AS max_vec

-- name: fact_vectors
-- Every fact with a vector (recall masks by valid time in numpy, so one load serves now and any as_of).
SELECT s.id, s.valid_from, s.valid_to, v.embedding FROM mem_semantic s
JOIN mem_semantic_vec v ON v.fact_id = s.id
ORDER BY s.id

-- name: facts_by_ids
-- The facts with the given ids (a JSON array).
SELECT * FROM mem_semantic WHERE id IN (SELECT value FROM json_each(:ids))

-- name: companion_quotes
-- Her sent replies that contain a quote mark (where a coined phrase can be): inside-joke sources.
-- Replies that echo injected memory are left out: a phrase she only repeated from memory is not hers.
SELECT m.text, m.ts FROM chat_message m
LEFT JOIN mem_episodic e ON e.message_id = m.id
WHERE m.role = 'companion' AND m.status = 'sent' AND e.echo_of_injection IS NULL
  AND (m.text LIKE '%''%' OR m.text LIKE '%‘%' OR m.text LIKE '%“%' OR m.text LIKE '%「%'
       OR m.text LIKE '%『%' OR m.text LIKE '%"%')
ORDER BY m.ts

-- name: active_relations
-- Every active relational entry (ritual, nickname, inside joke, pattern, taboo).
SELECT * FROM mem_relational WHERE status = 'active' ORDER BY id

-- name: relationship_for_reply
-- What every reply should keep in mind: all active taboos first, then the newest other entries.
SELECT id, kind, statement, valid_from FROM mem_relational WHERE status = 'active'
ORDER BY kind = 'taboo' DESC, valid_from DESC, id DESC LIMIT :limit

-- name: relations_as_of
-- The relational entries valid at :as_of (begun by then, not yet ended).
SELECT * FROM mem_relational WHERE valid_from <= :as_of AND (valid_to IS NULL OR valid_to > :as_of) ORDER BY id

-- name: all_relations
-- Every relational entry ever recorded, superseded ones included.
SELECT * FROM mem_relational ORDER BY id

-- name: insert_relation
-- Add one active relational entry with its evidence; returns its id.
INSERT INTO mem_relational (kind, statement, status, valid_from, valid_to, recorded_at, superseded_by, evidence_json)
VALUES (:kind, :statement, 'active', :valid_from, NULL, :recorded_at, NULL, :evidence_json)
RETURNING id

-- name: relation_evidence
-- One relational entry's evidence ids (JSON), to merge more into.
SELECT evidence_json FROM mem_relational WHERE id = :id

-- name: merge_into_relation
-- Fold new evidence into an active relational entry.
UPDATE mem_relational SET evidence_json = :evidence_json WHERE id = :id AND status = 'active'

-- name: retire_relation
-- Superseded by a newer entry (superseded_by), or lifted by the user (superseded_by NULL, ended_evidence_json).
UPDATE mem_relational SET status = 'superseded', valid_to = :valid_to, superseded_by = :superseded_by,
    ended_evidence_json = :ended_evidence_json
WHERE id = :id AND status = 'active'

-- name: close_new_relation
-- Close a relational entry this same run added (a later candidate superseded it).
UPDATE mem_relational SET status = 'superseded', valid_to = :valid_to, superseded_by = :superseded_by WHERE id = :id
