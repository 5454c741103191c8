-- 0014_companion_identity: who this file is, wherever it is copied. `uid` is a random id made once, when she
-- is created (or here, for a file from before), and never changed: a replica or an export carries it, so a
-- restore can refuse a file of another companion. `handle` is the id she is served under in a companions
-- directory (`anima run --dir`, the file DIR/<handle>.db and the API path /v1/companions/<handle>/...);
-- NULL for a file that has only ever been served on its own.
ALTER TABLE companion ADD COLUMN uid TEXT;
ALTER TABLE companion ADD COLUMN handle TEXT;
UPDATE companion SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;
