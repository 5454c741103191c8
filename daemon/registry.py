"""Which companions this process serves, as the HTTP API sees them: one file, or every file of a directory.

The contract between the process that owns the companions (daemon/app.py for one file, daemon/host.py for
`anima run --dir`) and the API (daemon/api/): the API never opens a file itself, it asks here for the
DaemonContext of a handle and serves it. `single` is the companion of the unscoped paths (/v1/context, ...)
in single-file mode and None in many mode; `/v1/companions/{handle}/...` resolves through `get()`.
A companion whose file could not be opened (corrupt, locked, full) is not served: `fault()` says why, so
its health can answer 503 with the reason while every other companion goes on serving.
"""

from __future__ import annotations

import re
from typing import Protocol

from daemon.component import DaemonContext

# A handle is the file's stem in the companions directory and a path segment of the API: kept to
# characters that need no escaping anywhere (URLs, file names, journald fields, litestream paths).
HANDLE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def valid_handle(handle: str) -> bool:
    return bool(HANDLE_PATTERN.fullmatch(handle))


class CompanionRegistry(Protocol):
    """What the API reads of the companions being served; changes at runtime (SIGHUP, directory watch)."""

    @property
    def single(self) -> DaemonContext | None:
        """The companion of the unscoped paths (single-file mode); None when serving a directory."""
        ...

    def get(self, handle: str) -> DaemonContext | None:
        """The running companion of this handle, or None (unknown, not yet started, failed or removed)."""
        ...

    def handles(self) -> list[str]:
        """Every handle being served (started and healthy enough to answer), sorted."""
        ...

    def fault(self, handle: str) -> str | None:
        """Why a known companion is not served (its file is corrupt, locked by another daemon, ...), else None."""
        ...


class SingleCompanion:
    """Single-file mode: the one context on the unscoped paths, under no handle."""

    def __init__(self, ctx: DaemonContext):
        self._ctx = ctx

    @property
    def single(self) -> DaemonContext | None:
        return self._ctx

    def get(self, handle: str) -> DaemonContext | None:
        return None

    def handles(self) -> list[str]:
        return []

    def fault(self, handle: str) -> str | None:
        return None
