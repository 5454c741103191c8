-- 0016_companion_home: where she lives and what she does, per companion (issue 24 item 7). `home_city` is a
-- city of engine/life/data/cities.toml, `home_tz` the IANA zone her day runs in (her city's), `work_role` a
-- role id of engine/life/data/roles.toml. Written when she is created (`anima init --city/--tz/--role`, or
-- the [life] defaults of that moment); NULL in a file from before: she then lives by [life] city, tz and
-- role as she always did. Not birth facts: the immutable trigger does not cover them (she may move).
ALTER TABLE companion ADD COLUMN home_city TEXT;
ALTER TABLE companion ADD COLUMN home_tz TEXT;
ALTER TABLE companion ADD COLUMN work_role TEXT;
