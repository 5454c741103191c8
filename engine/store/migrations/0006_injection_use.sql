-- 0006_injection_use: which turn's reply used a context block, and when (engine/memory/usage.py).
-- A block handed out by POST /v1/context is only a candidate; the next POST /v1/turns of that reply
-- confirms it (by injection_id, or by the turn_id the context was asked for), and only then are its
-- memories strengthened. used_at is set once: a replayed turn finds it set and strengthens nothing.
ALTER TABLE context_injection ADD COLUMN used_turn_id TEXT;
ALTER TABLE context_injection ADD COLUMN used_at REAL;
CREATE INDEX context_injection_turn ON context_injection(turn_id);
CREATE INDEX context_injection_used_turn ON context_injection(used_turn_id) WHERE used_turn_id IS NOT NULL;
