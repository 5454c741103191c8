"""Create her: validate the birth facts, chart them, derive the persona, and write the immutable row."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engine.errors import ConflictError, InputError
from engine.store import transaction
from engine.store.core import get_companion, insert_companion, log_event, set_companion_home

if TYPE_CHECKING:
    from engine.home import Home

_BIRTH = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$")
MAX_NAME_CHARS = 40


def validate_birth(birth_local: str, tz: str) -> None:
    if not _BIRTH.match(birth_local):
        raise InputError(f'birth must be "YYYY-MM-DD HH:MM", got {birth_local!r}')
    try:
        datetime.strptime(birth_local, "%Y-%m-%d %H:%M")
    except ValueError:
        raise InputError(f"birth {birth_local!r} is not a real date and time") from None
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"tz must be an IANA time zone such as Asia/Shanghai, got {tz!r}") from None


def create_companion(
    conn: Any, *, name: str, birth_local: str, tz: str, place: str | None, sect: int, now: float,
    home: Home | None = None,
) -> dict[str, Any]:
    """Write her one companion row (refused if she already exists: birth facts are immutable), with her home
    (city, zone, role: engine/home.py) in the same transaction when given."""
    from engine.bazi import birth_instant_utc, compute_chart
    from engine.persona import persona_from_chart

    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise InputError(f"name must be 1 to {MAX_NAME_CHARS} characters, got {len(name)}")
    validate_birth(birth_local, tz)
    chart = compute_chart(birth_local, tz, sect)
    persona = persona_from_chart(chart).to_dict()
    with transaction(conn):
        existing = get_companion(conn)
        if existing is not None:
            raise ConflictError(
                f"this database already holds companion {existing['name']!r}; her birth facts are immutable "
                "(use another --db for a new companion)"
            )
        insert_companion(
            conn,
            name=name,
            birth_local=birth_local,
            birth_tz=tz,
            birth_utc=birth_instant_utc(birth_local, tz),
            birth_place=place,
            bazi_sect=sect,
            chart_json=json.dumps(chart, ensure_ascii=False, sort_keys=True),
            persona_json=json.dumps(persona, ensure_ascii=False, sort_keys=True),
            created_at=now,
        )
        if home is not None:
            set_companion_home(conn, home.city, home.tz, home.role)
        log_event(conn, now, "companion.created", sect=sect)
    companion = get_companion(conn)
    assert companion is not None
    return companion
