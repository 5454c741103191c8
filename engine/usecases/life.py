"""Read the life events she has told, oldest first: the only life text a public read may carry."""

from __future__ import annotations

from typing import Any

from engine.store.life import life_events


def told_events(conn: Any, since: float | None, limit: int) -> list[dict[str, Any]]:
    """At most `limit` told events since `since` (id, ts, kind, text, told_at, told_turn_id); never an untold one."""
    out = []
    for row in life_events(conn, since=since, told_only=True):
        if not row.get("told"):
            continue  # belt and braces: told_only is the contract, this is the guarantee
        out.append({key: row.get(key) for key in ("id", "ts", "kind", "text", "told_at", "told_turn_id")})
        if len(out) >= limit:
            break
    return out
