"""Parse the ISO 8601 instants people and clients type into Unix seconds, one rule for every entry point.

Two rules, by who types the time:
- operators' commands (`anima life add --ts`, `--since`, `simulate --start`) may omit the offset: the
  time is then in her zone (`parse_instant(..., default_tz)`);
- what a client records (the API's `ts`, and every line of `anima ingest`, which is the same data in
  bulk) must carry an explicit offset (`Z` or `±hh:mm`), in ASCII digits, and lie in the accepted
  window: not before 2000-01-01T00:00:00Z, and not more than 24 hours ahead of the daemon's clock
  (`parse_client_instant`). A chat from 1970 or 2099 is a client bug, and a stored wrong instant would
  mislead recall's time filters and her gap arithmetic forever.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from engine.errors import InputError

EARLIEST_TS = 946_684_800.0  # 2000-01-01T00:00:00Z: no chat this companion keeps predates it
MAX_AHEAD_S = 86_400.0  # a client's clock may run ahead of hers by at most a day


def calendar_date(ts: float, tz: str) -> str:
    """The calendar date of the instant `ts` in her zone `tz`.

    Her zone, not the offset the front end sent with the turn: two turns a minute apart sent with
    different offsets were dated 12-04 and 12-05 in the memory block, and `forget --since 2026-12-05`
    (read in her zone) then removed a turn the block had dated 12-04 (issue 25)."""
    return datetime.fromtimestamp(ts, ZoneInfo(tz)).strftime("%Y-%m-%d")


def sent_date(ts_iso: str | None) -> str | None:
    """The date part of the time the front end sent (its own offset); what calendar_date used before issue 25,
    so statements written then still start with it."""
    return ts_iso[:10] if ts_iso and len(ts_iso) >= 10 and ts_iso[4] == "-" else None


def _iso_datetime(text: str) -> datetime | None:
    """The one reading of an ISO 8601 time for both rules below: surrounding blanks ignored, 'Z' or 'z' for
    UTC; None when it is not one (blank included), so each rule words its own refusal."""
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def parse_instant(text: str, where: str, default_tz: str | None = None) -> float:
    """ISO 8601 to Unix seconds. A time without an offset is in `default_tz` (her zone, for operators'
    commands), else UTC (for clients, which should always send an offset). 'Z' is accepted."""
    parsed = _iso_datetime(text) if isinstance(text, str) else None
    if parsed is None:
        raise InputError(f"{where} must be an ISO 8601 time such as 2026-06-01T22:00:00+08:00, got {text!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=ZoneInfo(default_tz) if default_tz else UTC)
    return parsed.timestamp()


def parse_client_instant(text: object, where: str, now: float | None = None) -> float:
    """ISO 8601 with an explicit offset to Unix seconds, inside [EARLIEST_TS, now + MAX_AHEAD_S].

    The one rule for the API's `ts` and for `anima ingest` lines (see the module docstring); without
    `now` only the lower bound is checked.
    """
    example = "such as 2026-06-01T22:00:00+08:00"
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where} must be an ISO 8601 time with an offset {example}, got {text!r}")
    if not text.isascii():
        raise InputError(f"{where} must be written in ASCII digits ({example}), got {text[:64]!r}")
    parsed = _iso_datetime(text)
    if parsed is None:
        raise InputError(f"{where} must be an ISO 8601 time with an offset {example}, got {text[:64]!r}")
    if parsed.tzinfo is None:
        raise InputError(f"{where} {text[:64]!r} has no UTC offset; add one ('Z' or e.g. +08:00) so the instant "
                         "is unambiguous")
    ts = parsed.timestamp()
    check_window(ts, where, now, shown=text[:64])
    return ts


def check_window(ts: float, where: str, now: float | None, shown: str | None = None) -> None:
    """InputError unless EARLIEST_TS <= ts <= now + MAX_AHEAD_S (the upper bound only when `now` is known)."""
    label = shown if shown is not None else f"{ts:g}"
    if ts < EARLIEST_TS:
        raise InputError(f"{where} {label!r} is before 2000-01-01T00:00:00Z; send the real time of the message")
    if now is not None and ts > now + MAX_AHEAD_S:
        ahead_h = (ts - now) / 3600.0
        raise InputError(f"{where} {label!r} is {ahead_h:.0f} h ahead of the daemon's clock (at most "
                         f"{MAX_AHEAD_S / 3600:.0f} h is accepted); check the client's clock")
