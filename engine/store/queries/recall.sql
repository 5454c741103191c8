-- name: mem_ids_in_window
-- Chat memories whose message time falls in [start, end): the time lane of a question that names a time ("三月份").
SELECT e.id FROM chat_message m JOIN mem_episodic e ON e.message_id = m.id
WHERE m.ts >= :start AND m.ts < :end
ORDER BY m.ts DESC LIMIT :cap

-- name: mem_fts_tokens_of
-- The stored keyword tokens (jieba words + CJK bigrams) of the candidate memories, for keyword coverage.
SELECT rowid AS id, tokens FROM mem_fts WHERE rowid IN (SELECT value FROM json_each(:ids))
