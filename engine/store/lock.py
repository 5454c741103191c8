"""One process owns one database file: an exclusive, non-blocking flock on '<db>.lock'.

A lock file beside the database (not SQLite's own locking_mode=EXCLUSIVE) keeps the file readable
by the CLI (`anima recall`, `anima status`) while the daemon runs, and the kernel drops the lock
when the process dies, even on kill -9, so there is no stale lock to clean up. `anima restore`
takes the same lock while it replaces the file, so no daemon can start on a half-restored database.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from engine.errors import LockedError


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


class DaemonLock:
    def __init__(self, db_path: Path):
        self.path = lock_path(db_path)
        self.fd: int | None = None

    def acquire(self, refusal: str = "database {db} is already used by another anima daemon (pid {pid}); "
                                     "stop it first or pass another --db") -> None:
        """Take the lock or raise LockedError with `refusal` ({db} and the holder's {pid} filled in)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o640)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockedError(refusal.format(db=self.path.with_suffix(""), pid=holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    @contextlib.contextmanager
    def held(self, refusal: str) -> Iterator[None]:
        self.acquire(refusal)
        try:
            yield
        finally:
            self.release()


def is_locked(db_path: Path) -> bool:
    """True when a daemon (or a restore) holds the database: for `anima status`."""
    path = lock_path(db_path)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
