-- 0007_forget: the one deletion anima allows (engine/memory/forget.py), and guards that keep it the only one.
-- Nothing else is ever deleted: chat_message, mem_episodic, mem_semantic and mem_relational refuse DELETE
-- unless the forget transaction has set its marker row, which it clears again before it commits (a crash
-- rolls both back). event_log stays append-only with no exception: the forget event is appended, never
-- removed, and holds ids and counts only.

-- The forget-in-progress marker: at most one row, present only inside the forget transaction.
CREATE TABLE forget_in_progress (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    started_at  REAL NOT NULL
);

-- Facts and relational entries: the 0001 triggers refused every delete; now every delete but forget's.
DROP TRIGGER mem_semantic_no_delete;
CREATE TRIGGER mem_semantic_no_delete BEFORE DELETE ON mem_semantic
WHEN NOT EXISTS (SELECT 1 FROM forget_in_progress)
BEGIN SELECT RAISE(ABORT, 'facts are never deleted; supersede them'); END;

DROP TRIGGER mem_relational_no_delete;
CREATE TRIGGER mem_relational_no_delete BEFORE DELETE ON mem_relational
WHEN NOT EXISTS (SELECT 1 FROM forget_in_progress)
BEGIN SELECT RAISE(ABORT, 'relational entries are never deleted; supersede them'); END;

-- Messages and memories were never deleted by convention; now the schema says so.
CREATE TRIGGER chat_message_no_delete BEFORE DELETE ON chat_message
WHEN NOT EXISTS (SELECT 1 FROM forget_in_progress)
BEGIN SELECT RAISE(ABORT, 'chat_message is never deleted (only anima forget removes a turn)'); END;

CREATE TRIGGER mem_episodic_no_delete BEFORE DELETE ON mem_episodic
WHEN NOT EXISTS (SELECT 1 FROM forget_in_progress)
BEGIN SELECT RAISE(ABORT, 'memories are never deleted (only anima forget removes a turn)'); END;

-- A consolidation pass plans outside its write transaction: one that read a turn before it was forgotten
-- must not write a fact from it afterwards. Evidence must exist when a fact or entry is written or merged;
-- the pass then fails, is retried, and no longer sees the forgotten episode.
CREATE TRIGGER mem_semantic_evidence_exists BEFORE INSERT ON mem_semantic
WHEN EXISTS (SELECT 1 FROM json_each(NEW.evidence_json) j
             WHERE NOT EXISTS (SELECT 1 FROM mem_episodic e WHERE e.id = j.value))
BEGIN SELECT RAISE(ABORT, 'fact evidence no longer exists (a turn was forgotten); consolidation will retry'); END;

CREATE TRIGGER mem_semantic_evidence_exists_update BEFORE UPDATE OF evidence_json ON mem_semantic
WHEN EXISTS (SELECT 1 FROM json_each(NEW.evidence_json) j
             WHERE NOT EXISTS (SELECT 1 FROM mem_episodic e WHERE e.id = j.value))
BEGIN SELECT RAISE(ABORT, 'fact evidence no longer exists (a turn was forgotten); consolidation will retry'); END;

CREATE TRIGGER mem_relational_evidence_exists BEFORE INSERT ON mem_relational
WHEN EXISTS (SELECT 1 FROM json_each(NEW.evidence_json) j
             WHERE NOT EXISTS (SELECT 1 FROM mem_episodic e WHERE e.id = j.value))
BEGIN SELECT RAISE(ABORT, 'relational evidence no longer exists (a turn was forgotten); consolidation will retry'); END;

CREATE TRIGGER mem_relational_evidence_exists_update BEFORE UPDATE OF evidence_json ON mem_relational
WHEN EXISTS (SELECT 1 FROM json_each(NEW.evidence_json) j
             WHERE NOT EXISTS (SELECT 1 FROM mem_episodic e WHERE e.id = j.value))
BEGIN SELECT RAISE(ABORT, 'relational evidence no longer exists (a turn was forgotten); consolidation will retry'); END;
