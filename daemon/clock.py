"""The daemon's clock: the one place that reads time, so tests can run days of her life in milliseconds.

`SystemClock` is the real one. `FakeClock` is for in-process tests. `OffsetFileClock` is a test hook
for end-to-end tests of the real process: it adds to the wall clock the number of seconds written in
a file (`ANIMA_TEST_CLOCK_FILE`), so a test can move her time forward by hours between restarts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Her time, as Unix seconds."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class FakeClock:
    def __init__(self, start: float):
        self.t = float(start)

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> float:
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


def clock_from_env() -> Clock:
    path = os.environ.get("ANIMA_TEST_CLOCK_FILE")
    return OffsetFileClock(Path(path)) if path else SystemClock()
