"""CLI writers that cannot go through the daemon take her file's daemon lock, or are refused with one line.

`anima ingest` and `anima reembed` write for seconds to minutes. Next to a running daemon they made
live requests fail with "database is locked" and stalled her heartbeat for half a minute (ingest), or
swapped the vector table under turns arriving meanwhile, stranding their vectors while health said 0
pending (reembed) (issue 25). So, like `anima restore`, they hold the lock a daemon takes at start
(engine/store/lock.py) for the whole run: a running daemon (single-file or a directory host, which
holds each companion's lock) refuses them before anything is read or written, and no daemon can start
on the file half-way through.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from engine.usecases.files import DaemonLock

REFUSAL = ("anima {command}: a running anima daemon (pid {{pid}}) holds {{db}}; nothing was changed. Stop it first "
           "(systemctl stop anima; in a companions directory: touch DIR/<handle>.stop and wait for her to be "
           "closed), run anima {command} again, then start it")


@contextlib.contextmanager
def exclusive(db: Path, command: str) -> Iterator[None]:
    """Hold her daemon lock while `command` runs; LockedError (exit 2, one line) when a daemon holds it."""
    lock = DaemonLock(db)
    lock.acquire(REFUSAL.format(command=command))
    try:
        yield
    finally:
        lock.release()
