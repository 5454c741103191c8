"""The operator's view of her past: her timeline (untold events marked), her mood trace, and a backstory event added.

`anima life` and `anima mood` are operator tools on the host: they read untold (told=0) life events
because the operator owns the file; nothing here is logged, and no chat path calls it.
"""

from __future__ import annotations

from typing import Any

from engine.store import life as life_store
from engine.store import transaction
from engine.store.core import get_companion
from engine.store.oplog import record_write


def timeline_rows(conn: Any, since: float, until: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Her activities and every life event (told or not) from `since` to `until`."""
    return life_store.activities(conn, since, until), life_store.life_events(conn, since, until, told_only=False)


def mood_history(conn: Any, since: float, until: float) -> dict[str, Any]:
    """Her mood trace, activities and told life events from `since` to `until`, and her name (for a plot)."""
    companion = get_companion(conn)
    return {"points": life_store.trace(conn, since, until), "activities": life_store.activities(conn, since, until),
            "told": life_store.life_events(conn, since, until, told_only=True),  # only told life is marked
            "name": str(companion["name"]) if companion else ""}


def add_backstory(conn: Any, text: str, ts: float, now: float, *, told: bool, embedder: Any = None) -> int:
    """One backstory life event, in one transaction with its write record (its id, never its text).

    A told one takes the API receipt's "she told it" step too (told once, and its memory row), which
    needs `embedder`."""
    with transaction(conn):
        event_id = life_store.add_life_event(conn, text, ts, told=told, origin="backstory", kind="backstory")
        if told:
            from engine.usecases.share import tell_life_event

            tell_life_event(conn, embedder, event_id, None, now)
        record_write(conn, now, "life_add", actor="cli", life_event_id=event_id, told=told)
    return event_id
