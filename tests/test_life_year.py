"""A simulated year of her life read by every consistency check (issue 12, acceptance 2): no contradiction of her world.

Her sentences against the same world her day machine reads (engine/life/world.py for her city and seed): flowers
and fruit in season, dawn and dusk words at her city's sun times, one weather a day unless a change is told,
numbers that fit the activity's duration, storylines that end once. The run beats hourly: the narration does not
depend on the beat (tests/test_simulate.py pins that), only the mood trace's resolution does.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from daemon.cli.cmd_simulate import parse_start, simulate
from engine.life import checks
from engine.life.world import WorldDay, world_day
from engine.settings import Settings
from engine.usecases.simulate import read_kept_run

S = Settings()
START = parse_start("2026-01-05T04:00", S.life.tz)   # a Monday in January of a year chinese-calendar knows
BIRTH = ("1990-08-15 08:30", "Asia/Shanghai", 2)


@pytest.mark.slow
def test_a_simulated_year_has_no_narration_inconsistency(tmp_path: Path) -> None:
    kept = tmp_path / "year.db"
    simulate(S, days=365, start=START, birth=BIRTH, name="小安", step_s=3600.0, keep=str(kept))
    rows, events, seed = read_kept_run(kept)
    home = getattr(S.life, "city", S.companion.demo_place)

    @cache
    def world(date) -> WorldDay:  # type: ignore[no-untyped-def]
        return world_day(date, home, seed)

    assert len(events) > 365                                    # she lived and said something every day
    found = checks.run_all(checks.lines_from_rows(events, rows, ZoneInfo(S.life.tz)), world, checks.people_names())
    counts = Counter({name: len(f) for name, f in found.items() if f})
    first = [(f.check, f.event_id, f.word) for fs in found.values() for f in fs[:3]]
    assert not counts, f"findings per check {dict(counts)}, first ids {first}"
