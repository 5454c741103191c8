"""When background work is due: the one place that decides to queue a job, by her local time ([life] tz).

Consolidation is due during her main sleep when the inner life records activities (kind 'sleep'),
else once a day at [consolidation] cron_hour of her local time, and whenever more than
min_new_episodes episodes wait. "Her local time" is the zone her day runs in (`[life] tz`, the
same `local_time` her day plan uses), not her birth zone: a cron hour at 03:00 means 03:00 of the
day she lives. Her sleep and the backlog are states, asked once a beat (`enqueue_due`); the cron
hour is a time of day, so the calendar (daemon/scheduler.py, apscheduler) fires it and asks
`enqueue_due(..., at_cron=True)` (arq keeps cron apart from the worker the same way); the worker
only claims and runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.activity import local_time
from engine.consolidate.run import JOB_KIND as CONSOLIDATE
from engine.jobs.lease import enqueue
from engine.settings import Settings
from engine.store import jobs as store
from engine.store.core import read_switches
from engine.store.life import current_activity

MIN_HOURS_BETWEEN_CRON_RUNS = 20.0
FAILED_COOLDOWN_S = 3600.0


@dataclass(frozen=True)
class Scheduled:
    """A job `enqueue_due` queued (or found already open): its id, kind, why, and the backlog it saw."""

    job_id: int
    kind: str
    trigger: str
    backlog: int


def her_local_hour(now: float, tz: str) -> int:
    """The hour on her clock: `now` in the zone her day runs in ([life] tz)."""
    return local_time(now, tz).hour


def should_schedule(*, now: float, tz: str, cron_hour: int | None, last_done: float | None,
                    activity: dict[str, Any] | None, backlog: int, min_new_episodes: int,
                    last_failed: float | None = None, at_cron: bool = False) -> str | None:
    """Why a consolidation job should be queued now ('sleep', 'cron', 'backlog'), or None. Pure.

    The cron rule applies when `at_cron` (the calendar fired it) or when her local hour is `cron_hour`;
    `cron_hour=None` leaves the hour to the calendar.
    """
    if last_failed is not None and now - last_failed < FAILED_COOLDOWN_S:
        return None  # a job that failed for good is not re-queued in a tight loop
    chatting = activity is not None and activity.get("kind") == "chat"
    if backlog > min_new_episodes and not chatting:
        # Not in the middle of a conversation: a pass is seconds of CPU-bound Python that would hold
        # the interpreter while the chat server waits on context (profiled: 25 % of the daemon's
        # samples under 20 paced clients). The backlog waits for the chat to go quiet.
        return "backlog"
    if backlog == 0:
        return None
    if activity is not None:
        # Her inner life is running: consolidate once per main sleep.
        if activity.get("kind") == "sleep" and (last_done is None or last_done < float(activity["started_at"])):
            return "sleep"
        return None
    at_hour = at_cron or (cron_hour is not None and her_local_hour(now, tz) == cron_hour)
    if at_hour and (last_done is None or now - last_done > MIN_HOURS_BETWEEN_CRON_RUNS * 3600):
        return "cron"
    return None


def schedule_state(conn: Any) -> dict[str, Any]:
    """What `should_schedule` needs from the file: last done/failed run, current activity, backlog."""
    last_done, last_failed = store.last_finished(conn, CONSOLIDATE)
    return {"last_done": last_done, "last_failed": last_failed, "activity": current_activity(conn),
            "backlog": store.unconsolidated_count(conn)}


def enqueue_due(conn: Any, now: float, settings: Settings, *, at_cron: bool = False) -> Scheduled | None:
    """Queue a consolidation job if one is due now (an open one is reused, not doubled); None if none is.

    A beat asks with `at_cron=False` (her sleep, the backlog); the calendar's firing at cron_hour with True.
    """
    cs = settings.consolidation
    state = schedule_state(conn)
    why = should_schedule(now=now, tz=settings.life.tz, cron_hour=None, last_done=state["last_done"],
                          activity=state["activity"], backlog=state["backlog"],
                          min_new_episodes=cs.min_new_episodes, last_failed=state["last_failed"], at_cron=at_cron)
    if why is None:
        return None
    job_id = enqueue(conn, CONSOLIDATE, {"trigger": why}, now, max_attempts=settings.jobs.max_attempts)
    return Scheduled(job_id, CONSOLIDATE, why, state["backlog"])


def enqueue_calendar(conn: Any, kind: str, now: float, settings: Settings) -> int | None:
    """A calendar firing (daemon/scheduler.py) in her file: queue its job (an open one is reused); its id, or None.

    Consolidation at cron_hour obeys her `consolidation` switch and the cron rule (a backlog, once a
    night, her sleep instead when her inner life runs); a maintenance kind is queued as it is.
    """
    if kind == CONSOLIDATE:
        if not read_switches(conn).consolidation:
            return None
        due = enqueue_due(conn, now, settings, at_cron=True)
        return due.job_id if due is not None else None
    return enqueue(conn, kind, {"trigger": "calendar"}, now, max_attempts=settings.jobs.max_attempts)
