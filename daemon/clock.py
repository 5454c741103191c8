"""The daemon's clock: the one place that reads time, so tests can run days of her life in milliseconds.

Every clock has two faces. `now()` is her time (Unix seconds, the wall clock): what is stored and
shown. `monotonic()` only ever moves forward at the rate real time passes: what the heartbeat is
scheduled on and what "how long ago was the last beat" is measured with. The wall clock can be
stepped (NTP, an operator, a VM resume); the monotonic one cannot, so comparing how far each moved
between two beats is how a step is noticed (`wall_step`).

`SystemClock` is the real one. `FakeClock` is for in-process tests (`advance` moves both faces,
`step` only the wall). `OffsetFileClock` is a test hook for end-to-end tests of the real process: it
adds to the wall clock the number of seconds written in a file (`ANIMA_TEST_CLOCK_FILE`), so a test
can move her time forward by hours between restarts, or step the wall clock of a running daemon
backwards and forwards while its monotonic face keeps the real pace.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

# A beat may run late by the loop's lag; wall and monotonic then still agree to well under this.
# Anything larger between two beats is a step of the wall clock, not scheduling noise.
STEP_TOLERANCE_S = 2.0


class Clock(Protocol):
    def now(self) -> float:
        """Her time, as Unix seconds."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps (only differences mean anything)."""
        ...


# CLOCK_BOOTTIME (Linux) is monotonic AND counts time suspended: after a laptop or VM resumes, the
# hours it slept are real time passed, not a wall-clock step. CLOCK_MONOTONIC stops during suspend.
_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def _steady() -> float:
    return time.clock_gettime(_BOOTTIME) if _BOOTTIME is not None else time.monotonic()


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return _steady()


class FakeClock:
    def __init__(self, start: float, mono_start: float = 1000.0):
        self.t = float(start)
        self.mono = float(mono_start)

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> float:
        """Real time passes: both faces move."""
        self.t += seconds
        self.mono += max(0.0, seconds)
        return self.t

    def step(self, seconds: float) -> float:
        """The wall clock is set (NTP, an operator): only her time jumps; the monotonic face stays."""
        self.t += seconds
        return self.t


class OffsetFileClock:
    def __init__(self, path: Path):
        self.path = path

    def offset(self) -> float:
        try:
            return float(self.path.read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0.0

    def now(self) -> float:
        return time.time() + self.offset()

    def monotonic(self) -> float:
        return _steady()  # the offset is a wall-clock step: the monotonic face never sees it


def clock_from_env() -> Clock:
    path = os.environ.get("ANIMA_TEST_CLOCK_FILE")
    return OffsetFileClock(Path(path)) if path else SystemClock()


def wall_step(wall_before: float, mono_before: float, wall_after: float, mono_after: float,
              tolerance_s: float = STEP_TOLERANCE_S) -> float | None:
    """How far the wall clock was stepped between two readings, or None when it kept pace.

    Real time elapsed is what the monotonic clock says; whatever the wall clock moved beyond that
    (either way) is a step. Negative means the wall clock went backwards.
    """
    step = (wall_after - wall_before) - (mono_after - mono_before)
    return step if abs(step) > tolerance_s else None
