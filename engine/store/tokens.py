"""Her API bearer tokens in her own file: made, replaced and revoked here; only their sha256 is ever stored.

A token is 32 random bytes (URL-safe base64, 43 characters), printed once by `anima token` and never
stored: the file keeps its sha256, so a copy of the file (an export, a replica) does not carry a usable
token, and the API compares digests (daemon/api/tokens.py). She has at most one token at a time: making
a new one replaces the old in the same transaction, so rotating is one command and the old token stops
working at the daemon's next look (within one heartbeat). Each change is an event_log row, without the token.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from engine.store.connect import transaction
from engine.store.core import log_event
from engine.store.queries import q

TOKEN_BYTES = 32


def digest_of(token: str) -> str:
    """The stored form of a token: lowercase hex sha256 of its UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_digests(conn: Any) -> frozenset[str]:
    """Every stored digest: empty when she has no token (her paths are open)."""
    return frozenset(row[0] for row in conn.execute(q("token_digests")).fetchall())


def make_token(conn: Any, now: float) -> tuple[str, bool]:
    """A new random token for her, replacing any earlier one, in one transaction: (token, replaced)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with transaction(conn):
        replaced = conn.execute(q("delete_tokens")).rowcount > 0
        conn.execute(q("insert_token"), {"sha256": digest_of(token), "created_at": now})
        log_event(conn, now, "token.created", replaced=replaced)
    return token, replaced


def revoke_tokens(conn: Any, now: float) -> int:
    """Remove her tokens (her paths are open again); how many there were. Nothing to revoke writes nothing."""
    with transaction(conn):
        removed = int(conn.execute(q("delete_tokens")).rowcount)
        if removed:
            log_event(conn, now, "token.revoked", count=removed)
    return removed
