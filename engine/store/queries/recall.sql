-- name: mem_ids_in_window
-- Chat memories whose message time falls in [start, end): the time lane of a question that names a time ("三月份").
SELECT e.id FROM chat_message m JOIN mem_episodic e ON e.message_id = m.id
WHERE m.ts >= :start AND m.ts < :end
ORDER BY m.ts DESC LIMIT :cap

-- name: mem_fts_tokens_of
-- The stored keyword tokens (jieba words + CJK bigrams) of the candidate memories, for keyword coverage.
SELECT rowid AS id, tokens FROM mem_fts WHERE rowid IN (SELECT value FROM json_each(:ids))

-- name: mem_terms_doc_counts
-- Document counts of many query terms in one statement: each statement on fts5vocab opens a cursor that reads the
-- index structure (~4-10 ms a term at 100k memories on a loaded VM), so one IN list costs what one term did.
SELECT term, doc FROM temp.mem_fts_vocab WHERE term IN (SELECT value FROM json_each(:terms))
