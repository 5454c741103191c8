"""Parse the ISO 8601 instants people and clients type into Unix seconds, one rule for every entry point."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from engine.errors import InputError


def calendar_date(ts: float, ts_iso: str | None) -> str:
    """The calendar date the speaker lived it: the local date of ts_iso, else the UTC date."""
    if ts_iso and len(ts_iso) >= 10 and ts_iso[4] == "-":
        return ts_iso[:10]
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def parse_instant(text: str, where: str, default_tz: str | None = None) -> float:
    """ISO 8601 to Unix seconds. A time without an offset is in `default_tz` (her zone, for operators'
    commands), else UTC (for clients, which should always send an offset). 'Z' is accepted."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where} must be an ISO 8601 time such as 2026-06-01T22:00:00+08:00, got {text!r}")
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InputError(f"{where} must be an ISO 8601 time such as 2026-06-01T22:00:00+08:00, got {text!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=ZoneInfo(default_tz) if default_tz else UTC)
    return parsed.timestamp()
