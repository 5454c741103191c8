"""Process-wide caches kept per companion: RecentMap's bound, and interleaved companions living exactly as alone."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.companion import create_companion
from engine.control import Switches
from engine.inner import step_inner
from engine.persona import Persona
from engine.recent import RecentMap
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store.core import get_companion

START = datetime(2025, 3, 3, 6, 0, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()
ON = Switches.defaults()  # every switch on
BIRTHS = ("1990-08-15 08:30", "1996-11-03 22:10", "2000-02-29 06:45")


def test_a_recent_map_keeps_its_newest_keys_and_a_put_renews_a_key() -> None:
    kept: RecentMap[str, int] = RecentMap(2)
    kept.put("a", 1)
    kept.put("b", 2)
    kept.put("a", 3)  # renewed: now the newest
    kept.put("c", 4)  # b, the oldest, goes
    assert (kept.get("a"), kept.get("b"), kept.get("c"), len(kept)) == (3, None, 4, 2)
    with pytest.raises(ValueError):
        RecentMap(0)


def _companion(path: Path, birth: str):
    conn = connect(path)
    migrate(conn, now=START)
    create_companion(conn, name="小安", birth_local=birth, tz="Asia/Shanghai", place=None, sect=2, now=START)
    return conn, Persona.from_dict(get_companion(conn)["persona"])


def _life(conn) -> str:
    """A digest of everything her life wrote: state, activities, events, trace."""
    digest = hashlib.sha256()
    for table in ("mood_state", "activity", "life_event", "mood_trace"):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):  # noqa: S608 - fixed table names
            digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()


def test_companions_beating_in_turn_live_exactly_as_each_alone(tmp_path: Path) -> None:
    """A host interleaves a thousand companions' beats in one process: the life step's caches (her context,
    her parsed and encoded day state) must be hers, not the last companion's."""
    settings = Settings()
    beats = [START + 600.0 * i for i in range(1, 200)]  # ~33 hours at a 10-minute beat
    alone = []
    for n, birth in enumerate(BIRTHS):
        conn, persona = _companion(tmp_path / f"alone{n}.db", birth)
        for t in beats:
            step_inner(conn, settings, persona, t, ON)
        alone.append(_life(conn))
        conn.close()
    together = [_companion(tmp_path / f"together{n}.db", birth) for n, birth in enumerate(BIRTHS)]
    for t in beats:
        for conn, persona in together:
            step_inner(conn, settings, persona, t, ON)
    assert [_life(conn) for conn, _ in together] == alone
    assert len(set(alone)) == len(BIRTHS)  # three different lives, so a mix-up could not pass unseen
    for conn, _ in together:
        conn.close()
