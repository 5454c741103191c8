-- 0013_mood_step_switch: the switch "heartbeat" is now "mood_step", the name of what it switches (the beat
-- itself always runs; only her mood and energy stop moving). The stored value moves to the new key, so an
-- operator's "off" stays off; nothing else changes. engine/control.py still accepts "heartbeat" as an alias.
-- UPDATE OR IGNORE: should a "mood_step" row already exist, it stays, and the old row is left as it was
-- (the current name wins when both are read, engine/store/core.stored_controls).
UPDATE OR IGNORE life_control SET key = 'mood_step' WHERE key = 'heartbeat';
