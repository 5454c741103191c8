"""Accessors for the sharing channel: untold candidates, offers, receipts and expiry (share_offer table)."""

from __future__ import annotations

import secrets
from typing import Any

from engine.store.queries import q


def candidates(conn: Any, now: float, max_age_s: float, limit: int = 200) -> list[dict[str, Any]]:
    """Untold life events young enough to offer, with how often and when each was last offered (rows: the
    store knows no domain type; engine/share.candidate_of makes each a Candidate)."""
    rows = conn.execute(q("share_candidates"), {"since": now - max_age_s, "now": now, "limit": limit})
    return [dict(r) for r in rows]


def last_offer_at(conn: Any) -> float | None:
    row = conn.execute(q("last_offer_at")).fetchone()
    return row[0] if row else None


def open_offer_for_turn(conn: Any, turn_id: str, now: float) -> dict[str, Any] | None:
    row = conn.execute(q("open_offer_for_turn"), {"turn_id": turn_id, "now": now}).fetchone()
    return dict(row) if row else None


def insert_offer(conn: Any, life_event_id: int, turn_id: str, now: float, ttl_s: float) -> str:
    share_id = "sh_" + secrets.token_hex(8)
    conn.execute(q("insert_offer"), {"id": share_id, "life_event_id": life_event_id, "turn_id": turn_id,
                                     "now": now, "expires_at": now + ttl_s})
    return share_id


def get_offer(conn: Any, share_id: str) -> dict[str, Any] | None:
    row = conn.execute(q("get_offer"), {"id": share_id}).fetchone()
    return dict(row) if row else None


def receive_offer(conn: Any, share_id: str, life_event_id: int, turn_id: str, now: float) -> None:
    conn.execute(q("receive_offer"), {"id": share_id, "turn_id": turn_id, "now": now})
    conn.execute(q("close_other_offers"), {"id": share_id, "life_event_id": life_event_id})


def expire_offers(conn: Any, now: float) -> int:
    """Mark offers past their expiry; returns how many (an unreceipted offer stays untold)."""
    return int(conn.execute(q("expire_offers"), {"now": now}).rowcount)


def next_offer_expiry(conn: Any) -> float | None:
    """When the first open offer expires, None when none is open (only a write opens one)."""
    row = conn.execute(q("next_offer_expiry")).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def memory_for_life_event(conn: Any, life_event_id: int) -> int | None:
    row = conn.execute(q("memory_for_life_event"), {"life_event_id": life_event_id}).fetchone()
    return int(row[0]) if row else None


def untold_fingerprint(conn: Any) -> tuple[Any, ...]:
    """(count, id sum, max id) of the untold life events: changes whenever the untold set does (indexed)."""
    row = conn.execute(q("untold_fingerprint")).fetchone()
    return (row[0], row[1], row[2])


def untold_texts(conn: Any) -> list[tuple[int, str]]:
    """(life event id, text) of every untold event: what the privacy projection must never let out."""
    return [(row["id"], row["text"]) for row in conn.execute(q("untold_texts"))]


def said_in_chat(conn: Any, life_event_id: int, prefix_chars: int) -> bool:
    """True when the event's text (or its first `prefix_chars` characters) occurs in a recorded chat message."""
    row = conn.execute(q("life_text_in_chat"), {"id": life_event_id, "prefix_chars": prefix_chars}).fetchone()
    return row is not None and bool(row[0])
