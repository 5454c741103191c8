-- 0015_api_token: her API bearer tokens (`anima token`), kept in her own file so that a token moves with her
-- (export, replica, restore on another host). Only the sha256 of a token is stored, as 64 lowercase hex
-- digits: a copy of the file does not give anyone her token. No row: her paths are open to whoever may use
-- the socket, as before; one row or more: every request to her paths needs one of these tokens.
CREATE TABLE api_token (
    sha256 TEXT PRIMARY KEY CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    created_at REAL NOT NULL
);
