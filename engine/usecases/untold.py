"""What the privacy projection reads of her untold life: the texts it must never let out, and what chat already said.

daemon/api/privacy.py keeps an index of these texts and scans every response body against it; it
reads them through here, so the API reaches no engine.store of its own (tests/test_layering.py).
"""

from __future__ import annotations

from typing import Any

from engine.store import share as share_store


def untold_fingerprint(conn: Any) -> tuple[Any, ...]:
    """Changes whenever the set of untold life events does (cheap, indexed): the index is re-read only then."""
    return share_store.untold_fingerprint(conn)


def untold_texts(conn: Any) -> list[tuple[int, str]]:
    """(life event id, text) of every untold event."""
    return share_store.untold_texts(conn)


def said_in_chat(conn: Any, life_event_id: int, prefix_chars: int) -> bool:
    """True when the event's text (or its first `prefix_chars` characters) occurs in a recorded chat message:
    she said it herself, so a response repeating it reveals nothing new."""
    return share_store.said_in_chat(conn, life_event_id, prefix_chars)
