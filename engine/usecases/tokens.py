"""Her API token: issued or revoked by `anima token`, its digests read by the API (which never sees a token stored).

The token itself is shown once, to the operator; the file keeps only its sha256 digest
(engine/store/tokens.py), and the API compares digests of what callers send.
"""

from __future__ import annotations

from typing import Any

from engine.errors import InputError
from engine.store.core import get_companion
from engine.store.tokens import digest_of, make_token, revoke_tokens, token_digests

__all__ = ["digest_of", "issue_token", "revoke", "token_digests"]


def _require_companion(conn: Any, where: str) -> None:
    if get_companion(conn) is None:
        raise InputError(f"token: {where} holds no companion yet; create her with anima init")


def issue_token(conn: Any, now: float, where: str) -> tuple[str, bool]:
    """A new token for her (replacing any earlier one), in one transaction: (token, replaced)."""
    _require_companion(conn, where)
    return make_token(conn, now)


def revoke(conn: Any, now: float, where: str) -> int:
    """Remove her tokens (her paths are open again); how many there were."""
    _require_companion(conn, where)
    return revoke_tokens(conn, now)
