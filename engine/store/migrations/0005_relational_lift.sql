-- 0005_relational_lift: a taboo the user lifts ("现在可以提他了") ends without a successor entry.
-- It is closed like any superseded entry (status, valid_to; superseded_by stays NULL) and keeps the
-- episodes that lifted it here, so the record says why it ended. NULL for every other entry.
ALTER TABLE mem_relational ADD COLUMN ended_evidence_json TEXT;
