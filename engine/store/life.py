"""Accessors for her inner-life tables: life_event, activity, mood_state and mood_trace.

`life_events()` returns only told events unless the caller asks for untold ones explicitly
(`told_only=False`): that is the operator view; nothing a chat front end reads may pass it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from engine.errors import InputError, NotFoundError
from engine.store.queries import q

FAR_PAST = -1e18
FAR_FUTURE = 1e18
MAX_LIFE_TEXT_CHARS = 2000
ORIGINS = ("life", "backstory")


def add_life_event(conn: Any, text: str, ts: float, told: bool = False, origin: str = "backstory",
                   kind: str = "backstory", *, activity_id: int | None = None) -> int:
    """Write one life event and return its id (told events get told_at = ts)."""
    text = text.strip()
    if not text or len(text) > MAX_LIFE_TEXT_CHARS:
        raise InputError(f"life event text must be 1 to {MAX_LIFE_TEXT_CHARS} characters, got {len(text)}")
    if origin not in ORIGINS:
        raise InputError(f"life event origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
    if not math.isfinite(ts):
        raise InputError(f"life event time must be a finite Unix time, got {ts!r}")
    cur = conn.execute(q("life_insert_life_event"), {
        "ts": ts, "activity_id": activity_id, "kind": kind, "text": text, "told": 1 if told else 0,
        "told_at": ts if told else None, "origin": origin,
    })
    return int(cur.lastrowid)


def life_events(conn: Any, since: float | None = None, until: float | None = None,
                told_only: bool = True) -> list[dict[str, Any]]:
    """Life events in [since, until), oldest first; untold ones only when told_only=False (operator view)."""
    rows = conn.execute(q("life_events_between"), {
        "since": FAR_PAST if since is None else since, "until": FAR_FUTURE if until is None else until,
        "include_untold": 0 if told_only else 1,
    }).fetchall()
    return [dict(r) for r in rows]


def get_life_event(conn: Any, life_event_id: int) -> dict[str, Any]:
    row = conn.execute(q("life_get_life_event"), {"id": life_event_id}).fetchone()
    if row is None:
        raise NotFoundError(f"life event {life_event_id} does not exist; list them with: anima life")
    return dict(row)


def mark_told(conn: Any, life_event_id: int, turn_id: str | None, now: float) -> None:
    """She told it (in turn `turn_id`): set told=1 once; telling it again changes nothing."""
    get_life_event(conn, life_event_id)
    conn.execute(q("life_mark_life_event_told"), {"id": life_event_id, "turn_id": turn_id, "now": now})


# --- mood_state / mood_trace -------------------------------------------------------------------


def get_inner_state(conn: Any) -> dict[str, Any] | None:
    row = conn.execute(q("life_get_mood_state")).fetchone()
    return json.loads(row["state_json"]) if row else None


def put_inner_state(conn: Any, state: dict[str, Any], now: float) -> None:
    put_inner_state_text(conn, json.dumps(state, ensure_ascii=False, sort_keys=True), now)


def get_inner_state_text(conn: Any) -> str | None:
    """The saved day state as its JSON text (the day machine caches the parse of the text it last wrote)."""
    row = conn.execute(q("life_get_mood_state")).fetchone()
    return str(row["state_json"]) if row else None


def put_inner_state_text(conn: Any, text: str, now: float) -> None:
    conn.execute(q("life_put_mood_state"), {"state_json": text, "now": now})


def put_trace_point(conn: Any, ts: float, v: float, a: float, d: float, e: float, activity: str | None) -> None:
    conn.execute(q("life_put_trace_point"), {"ts": ts, "v": v, "a": a, "d": d, "e": e, "activity": activity})


def put_trace_points(conn: Any, rows: list[tuple[float, float, float, float, float, str | None]]) -> None:
    """Many trace points (ts, v, a, d, e, activity) in one call: a simulated quiet stretch writes hundreds."""
    conn.executemany(q("life_put_trace_point"),
                     [{"ts": ts, "v": v, "a": a, "d": d, "e": e, "activity": kind} for ts, v, a, d, e, kind in rows])


def prune_trace(conn: Any, before: float) -> int:
    return int(conn.execute(q("life_prune_trace"), {"before": before}).rowcount)


def trace(conn: Any, since: float, until: float) -> list[dict[str, Any]]:
    return [dict(r) for r in conn.execute(q("life_trace_between"), {"since": since, "until": until})]


# --- activity ------------------------------------------------------------------------------------


def _activity(row: Any) -> dict[str, Any]:
    record = dict(row)
    record["detail"] = json.loads(record.pop("detail_json") or "{}")
    return record


def current_activity(conn: Any) -> dict[str, Any] | None:
    row = conn.execute(q("life_current_activity")).fetchone()
    return _activity(row) if row else None


def all_open_suspended(conn: Any) -> list[dict[str, Any]]:
    """Suspended activities still waiting for a resume-or-abandon decision, newest first."""
    return [_activity(r) for r in conn.execute(q("life_open_suspended_all"))]


def start_activity(conn: Any, *, kind: str, label: str, started_at: float, expected_end: float, why: str,
                   next_kind: str | None, detail: dict[str, Any]) -> int:
    cur = conn.execute(q("life_insert_activity"), {
        "kind": kind, "label": label, "started_at": started_at, "expected_end": expected_end, "why": why,
        "next_kind": next_kind, "detail_json": json.dumps(detail, ensure_ascii=False, sort_keys=True),
    })
    return int(cur.lastrowid)


def end_activity(conn: Any, activity_id: int, status: str, ended_at: float, detail: dict[str, Any]) -> None:
    conn.execute(q("life_end_activity"), {"id": activity_id, "status": status, "ended_at": ended_at,
                                     "detail_json": json.dumps(detail, ensure_ascii=False, sort_keys=True)})


def suspend_activity(conn: Any, activity_id: int, ended_at: float, turn_id: str | None, remaining_s: float,
                     detail: dict[str, Any]) -> None:
    conn.execute(q("life_suspend_activity"), {"id": activity_id, "ended_at": ended_at, "turn_id": turn_id,
                                         "remaining_s": remaining_s,
                                         "detail_json": json.dumps(detail, ensure_ascii=False, sort_keys=True)})


def close_suspended(conn: Any, activity_id: int, status: str, detail: dict[str, Any]) -> None:
    conn.execute(q("life_close_suspended"), {"id": activity_id, "status": status,
                                        "detail_json": json.dumps(detail, ensure_ascii=False, sort_keys=True)})


def extend_activity(conn: Any, activity_id: int, expected_end: float, detail: dict[str, Any]) -> None:
    conn.execute(q("life_extend_activity"), {"id": activity_id, "expected_end": expected_end,
                                        "detail_json": json.dumps(detail, ensure_ascii=False, sort_keys=True)})


def activities(conn: Any, since: float, until: float) -> list[dict[str, Any]]:
    """Activities overlapping [since, until), in start order (operator views and simulation)."""
    return [_activity(r) for r in conn.execute(q("life_activities_between"), {"since": since, "until": until})]
