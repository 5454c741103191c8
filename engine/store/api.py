"""Accessors for the queries of the request use cases (api.sql): a turn's recorded roles, the state counts, a probe."""

from __future__ import annotations

from typing import Any

from engine.store.queries import q


def turn_roles(conn: Any, turn_id: str) -> dict[str, str]:
    """role -> text of the messages already recorded under `turn_id` (empty when the turn is new)."""
    return {row["role"]: row["text"] for row in conn.execute(q("api_turn_roles"), {"turn_id": turn_id})}


def turn_recorded(conn: Any, turn_id: str) -> bool:
    return conn.execute(q("api_turn_roles"), {"turn_id": turn_id}).fetchone() is not None


def state_counts(conn: Any) -> dict[str, int]:
    """The counts GET /v1/state shows (messages, memories, facts, told life, jobs, open offers)."""
    return {k: int(v) for k, v in dict(conn.execute(q("api_counts")).fetchone()).items()}


def probe(conn: Any) -> None:
    """One trivial read: the database answers."""
    conn.execute(q("api_db_ok")).fetchone()


def chat_turn_latest(conn: Any, base: str) -> tuple[str, float] | None:
    """(turn_id, recorded at) of the newest turn whose id is `base` or `base-N`; None when none was recorded."""
    row = conn.execute(q("chat_turn_latest"), {"base": base}).fetchone()
    return None if row is None else (str(row["turn_id"]), float(row["created_at"]))
