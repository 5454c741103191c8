"""Test hook: kill this process with SIGKILL at a named point, so a test can crash a command mid-step.

`ANIMA_TEST_KILL_AT=<point>` makes `kill_point(<point>)` send SIGKILL to its own process: the same
death as `kill -9` or a power cut at that instant (no finally, no atexit, no flush of Python's
buffers). tests/test_restore_crash.py and bench/chaos_ops.py walk every point of `anima restore`
and `anima export` this way and check what is left on disk. Unset (always, outside tests), a point
costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

KILL_AT_ENV = "ANIMA_TEST_KILL_AT"


def kill_point(name: str) -> None:
    """Die here, now, by SIGKILL, when ANIMA_TEST_KILL_AT names this point."""
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
