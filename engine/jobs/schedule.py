"""When background work is due: the one place that decides to queue a job, by her local time ([life] tz).

Consolidation is due during her main sleep when the inner life records activities (kind 'sleep'),
else once a day at [consolidation] cron_hour of her local time, and whenever more than
min_new_episodes episodes wait. "Her local time" is the zone her day runs in (`[life] tz`, the
same `local_time` her day plan uses), not her birth zone: a cron hour at 03:00 means 03:00 of the
day she lives. The daemon's heartbeat calls `enqueue_due` once a beat (arq keeps cron apart from
the worker the same way); the worker only claims and runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.activity import local_time
from engine.consolidate.run import JOB_KIND as CONSOLIDATE
from engine.jobs.lease import enqueue
from engine.settings import Settings
from engine.store import jobs as store
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


def should_schedule(*, now: float, tz: str, cron_hour: int, last_done: float | None, activity: dict[str, Any] | None,
                    backlog: int, min_new_episodes: int, last_failed: float | None = None) -> str | None:
    """Why a consolidation job should be queued now ('sleep', 'cron', 'backlog'), or None. Pure."""
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
    if her_local_hour(now, tz) == cron_hour and (last_done is None
                                                 or now - last_done > MIN_HOURS_BETWEEN_CRON_RUNS * 3600):
        return "cron"
    return None


def schedule_state(conn: Any) -> dict[str, Any]:
    """What `should_schedule` needs from the file: last done/failed run, current activity, backlog."""
    last_done, last_failed = store.last_finished(conn, CONSOLIDATE)
    return {"last_done": last_done, "last_failed": last_failed, "activity": current_activity(conn),
            "backlog": store.unconsolidated_count(conn)}


def enqueue_due(conn: Any, now: float, settings: Settings) -> Scheduled | None:
    """Queue a consolidation job if one is due now (an open one is reused, not doubled); None if none is."""
    cs = settings.consolidation
    state = schedule_state(conn)
    why = should_schedule(now=now, tz=settings.life.tz, cron_hour=cs.cron_hour, last_done=state["last_done"],
                          activity=state["activity"], backlog=state["backlog"],
                          min_new_episodes=cs.min_new_episodes, last_failed=state["last_failed"])
    if why is None:
        return None
    job_id = enqueue(conn, CONSOLIDATE, {"trigger": why}, now, max_attempts=settings.jobs.max_attempts)
    return Scheduled(job_id, CONSOLIDATE, why, state["backlog"])
