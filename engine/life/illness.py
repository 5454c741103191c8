"""A cold now and then (issue 24 item 5): a few days of a stuffy nose and low energy, a cause of bad days. Pure.

Seeded per companion: each 28-day block of the calendar may hold one cold (more often in the cold months),
starting on a seeded day of the block and lasting 3-5 days. The day machine reads `cold_on` when she wakes: her
day's tone is lower, she is tired for a cause she names (感冒), she naps and goes to bed earlier, stays in, and
her waking sentence says how the cold is going.
"""

from __future__ import annotations

import datetime as dt

from engine.life.localtime import rng_for

BLOCK_DAYS = 28
# chance that a 28-day block holds a cold, by the month the block starts in (winter and spring colds)
CHANCE_BY_MONTH = {12: 0.4, 1: 0.4, 2: 0.35, 3: 0.3, 4: 0.2, 5: 0.15, 6: 0.1, 7: 0.1, 8: 0.1, 9: 0.15, 10: 0.2,
                   11: 0.3}
DAYS = (3, 5)
TONE_COST = (0.09, 0.06, 0.03)   # valence off her day's tone on the first, second and later days
TIRED = (0.7, 0.55, 0.35)        # the tired feeling it raises on waking, likewise
CAUSES = ("感冒了", "感冒还没好", "感冒还没好利索")


WELL_BETWEEN_DAYS = 10   # a new cold starts at least this long after the last one ended


def _drawn(seed_key: str, block: int) -> tuple[dt.date, int] | None:
    first = dt.date.fromordinal(max(1, block * BLOCK_DAYS))
    rng = rng_for(seed_key, "cold", block)
    if rng.random() >= CHANCE_BY_MONTH[first.month]:
        return None
    return first + dt.timedelta(days=rng.randint(0, BLOCK_DAYS - 1)), rng.randint(*DAYS)


def _cold_of(seed_key: str, block: int) -> tuple[dt.date, int] | None:
    """The cold a block holds (start, days), unless it would follow the previous block's too closely."""
    cold = _drawn(seed_key, block)
    before = _drawn(seed_key, block - 1)
    if cold is not None and before is not None and \
            cold[0] < before[0] + dt.timedelta(days=before[1] + WELL_BETWEEN_DAYS):
        return None
    return cold


def cold_on(seed_key: str, date: dt.date) -> tuple[int, int] | None:
    """(day of the cold from 1, its length) when she has a cold on `date`, else None."""
    for block in (date.toordinal() // BLOCK_DAYS, date.toordinal() // BLOCK_DAYS - 1):
        cold = _cold_of(seed_key, block)
        if cold is None:
            continue
        day = (date - cold[0]).days + 1
        if 1 <= day <= cold[1]:
            return day, cold[1]
    return None


def stage(cold: tuple[int, int] | None) -> str:
    """How the narration names the day of a cold: first | on | last ('' without one)."""
    if cold is None:
        return ""
    day, length = cold
    return "first" if day == 1 else "last" if day == length else "on"


def tone_cost(cold: tuple[int, int] | None) -> float:
    return 0.0 if cold is None else TONE_COST[min(cold[0], len(TONE_COST)) - 1]


def tired_raise(cold: tuple[int, int] | None) -> tuple[float, str] | None:
    """The tired feeling and its cause she wakes with on a day of her cold."""
    if cold is None or stage(cold) == "last":
        return None
    i = min(cold[0], len(TIRED)) - 1
    return TIRED[i], CAUSES[i]
