"""Hand freed heap back to the OS: glibc keeps what a thousand companions' threads freed unless asked.

The DB threads allocate from glibc's arenas for each companion (opening her file, the schema, her
first beats), and what they free stays in the arenas as free pages that still count in RSS:
44 KiB a companion at 1,000 companions, 44 MB (measured with the bench's files: RssAnon before and
after one malloc_trim(0), which took 5 ms). So the host trims once after its start scan and then
every TRIM_EVERY_S.

glibc also raises its mmap threshold whenever a large block is freed, so that later large blocks
(a recall's 1,000 x 384 vector matrix, 1.5 MB) come from the arenas and stay there after use; a
fixed threshold (`fix_mmap_threshold`) keeps such blocks mapped on their own and unmapped when freed.

Elsewhere than glibc (musl, macOS) both are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

TRIM_EVERY_S = 60.0
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
MMAP_THRESHOLD_BYTES = 256 * 1024  # glibc's own floor is 128 KiB; twice that keeps small reads in the arenas


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


_LIBC = _libc()


def fix_mmap_threshold() -> bool:
    """Stop glibc from raising its mmap threshold (once per process); True when it took effect."""
    return _LIBC is not None and bool(_LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def trim() -> bool:
    """Return every arena's free pages to the OS; True when some memory was released (a C call: no GIL held)."""
    return _LIBC is not None and bool(_LIBC.malloc_trim(0))
