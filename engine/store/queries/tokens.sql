-- Her API bearer tokens (engine/store/migrations/0015): sha256 digests only, never a token itself.

-- name: token_digests
-- Every stored token digest (hex sha256), for the API's in-RAM map digest -> companion.
SELECT sha256 FROM api_token ORDER BY sha256

-- name: delete_tokens
-- Remove every token: her paths are open again (anima token --revoke), or about to get a new one.
DELETE FROM api_token

-- name: insert_token
-- Store one token's sha256 (hex) and when it was made.
INSERT INTO api_token (sha256, created_at) VALUES (:sha256, :created_at)
