"""daemon/malloc_trim.py: freed heap goes back to the OS when the host trims (glibc only)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from daemon import malloc_trim

pytestmark = pytest.mark.skipif(malloc_trim._LIBC is None, reason="not glibc: malloc_trim and mallopt are no-ops")


def rss_anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon in /proc/self/status")


def test_what_a_thread_freed_below_a_live_block_is_returned_by_trim() -> None:
    before: list[int] = []
    after_free: list[int] = []

    def churn() -> None:  # a companion's DB thread: many small blocks, freed, one still live above them
        blocks = [bytearray(32 * 1024) for _ in range(1600)]  # 50 MB, below the mmap threshold: from an arena
        keep = bytearray(32 * 1024)  # noqa: F841  # live above the freed ones: glibc cannot trim its top itself
        before.append(rss_anon_kib())
        del blocks
        after_free.append(rss_anon_kib())
        malloc_trim.trim()
        after_free.append(rss_anon_kib())

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()
    freed_kept, trimmed = after_free
    assert before[0] - freed_kept < 10_000  # freed but still counted: what the host's trim is for
    assert freed_kept - trimmed > 30_000  # most of the 50 MB back to the OS


def test_the_mmap_threshold_can_be_fixed() -> None:
    assert malloc_trim.fix_mmap_threshold() is True
