-- Sharing channel and privacy projection: untold life events, share offers and their receipts.

-- name: untold_fingerprint
-- Changes whenever the set of untold events changes (insert, or told=1); indexed by life_event_told.
SELECT count(*), total(id), max(id) FROM life_event WHERE told = 0

-- name: untold_texts
-- The text of every untold life event: what the privacy projection must never let out.
SELECT id, text FROM life_event WHERE told = 0

-- name: life_text_in_chat
-- Was (the leading part of) this life event's text already said in a chat message?
SELECT EXISTS (
    SELECT 1 FROM life_event l, chat_message m
    WHERE l.id = :id AND instr(m.text, substr(trim(l.text), 1, :prefix_chars)) > 0
)

-- name: share_candidates
-- Untold life events of the window [:since, :now], newest first, with how often each was offered.
SELECT l.id AS life_event_id, l.ts, l.text, count(o.id) AS offers, max(o.offered_at) AS last_offered_at
FROM life_event l
LEFT JOIN share_offer o ON o.life_event_id = l.id
WHERE l.told = 0 AND l.ts >= :since AND l.ts <= :now
GROUP BY l.id
ORDER BY l.ts DESC
LIMIT :limit

-- name: last_offer_at
-- When the last share offer was made (the offer rate limit).
SELECT max(offered_at) FROM share_offer

-- name: open_offer_for_turn
-- The live offer already made for this turn, if any, so a repeated request gets the same one.
SELECT o.id, o.life_event_id, o.offered_at, o.expires_at, l.ts, l.text
FROM share_offer o JOIN life_event l ON l.id = o.life_event_id
WHERE o.turn_id = :turn_id AND o.status = 'offered' AND o.expires_at > :now AND l.told = 0
ORDER BY o.offered_at DESC
LIMIT 1

-- name: insert_offer
-- Record one offer of an untold life event for a turn, open until :expires_at.
INSERT INTO share_offer (id, life_event_id, turn_id, offered_at, expires_at, status)
VALUES (:id, :life_event_id, :turn_id, :now, :expires_at, 'offered')

-- name: get_offer
-- One offer with its life event's told state and text, for a receipt.
SELECT o.id, o.life_event_id, o.turn_id, o.offered_at, o.expires_at, o.status, o.receipt_turn_id, o.received_at,
       l.told, l.told_at, l.text
FROM share_offer o JOIN life_event l ON l.id = o.life_event_id
WHERE o.id = :id

-- name: receive_offer
-- Mark an offer received: the front end says she told it in :turn_id.
UPDATE share_offer SET status = 'received', receipt_turn_id = :turn_id, received_at = :now WHERE id = :id

-- name: close_other_offers
-- The event is told: its other open offers can no longer be receipted.
UPDATE share_offer SET status = 'expired'
WHERE life_event_id = :life_event_id AND id != :id AND status = 'offered'

-- name: expire_offers
-- Close every open offer past its expiry; their events stay untold.
UPDATE share_offer SET status = 'expired' WHERE status = 'offered' AND expires_at <= :now

-- name: next_offer_expiry
-- When the first open offer expires (NULL when none is open): a quiet heartbeat has nothing to expire before it.
SELECT min(expires_at) FROM share_offer WHERE status = 'offered'

-- name: memory_for_life_event
-- The memory row of a told life event, if it already has one.
SELECT id FROM mem_episodic WHERE life_event_id = :life_event_id
