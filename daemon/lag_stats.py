"""How late the host's heartbeats start: the last few minutes' percentiles and running counts, for GET /v1/health.

A thousand companions beat ~17 times a second; a warning line per late beat says that one was late,
not how late the beats are. Health carries the distribution instead: p50/p95/p99/max over the last
WINDOW_S (what an operator or `bench/many.py` wants to see now), and two running counts (beats, beats
later than `[heartbeat] lag_warn_ms`) that a reader diffs between two reads for an exact fraction
over any window of its own.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

WINDOW_S = 300.0  # the percentiles cover the last five minutes of beats
MAX_KEPT = 200_000  # beats kept for them: 1,000 companions at 1 s beats for 200 s (at 60 s: 3.3 hours' worth)


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list (the value at or below which `pct` % of the beats fall)."""
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


class LagStats:
    """Beat lags (ms) with the monotonic time each beat ran at."""

    def __init__(self, window_s: float = WINDOW_S, max_kept: int = MAX_KEPT):
        self.window_s = window_s
        self._recent: deque[tuple[float, float]] = deque(maxlen=max_kept)
        self.beats = 0
        self.late = 0  # beats later than warn_ms, counted as they come (the threshold then in force)

    def add(self, mono: float, lag_ms: float, warn_ms: float) -> None:
        self._recent.append((mono, lag_ms))
        self.beats += 1
        if lag_ms > warn_ms:
            self.late += 1

    def summary(self, now_mono: float, warn_ms: float) -> dict[str, Any]:
        """The body of health's `heartbeat_lag`: the window's percentiles (None before any beat) and the counts."""
        since = now_mono - self.window_s
        lags = sorted(lag for at, lag in self._recent if at >= since)
        out: dict[str, Any] = {"window_s": self.window_s, "beats": len(lags),
                               "beats_total": self.beats, "late_total": self.late, "warn_ms": warn_ms}
        for name, pct in (("p50_ms", 50.0), ("p95_ms", 95.0), ("p99_ms", 99.0)):
            out[name] = round(percentile(lags, pct), 2) if lags else None
        out["max_ms"] = round(lags[-1], 2) if lags else None
        return out
