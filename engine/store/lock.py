"""One process owns one database file: an exclusive flock on a lock file beside the file's one real name.

The lock belongs to the file, not to the spelling of its path. Two things make that so:
- the path is resolved first (symlinks, `..`, relative spellings), so `link.db -> a.db` locks
  `a.db.lock`, the same lock file the daemon on `a.db` holds;
- a database file with more than one hard link is refused (`st_nlink > 1`). SQLite names its
  `-wal`/`-shm` after the path it was opened by, so two names for one inode are two WALs for one
  file: a second daemon through the other name writes its own WAL and the first one's commits then
  meet pages they do not know (the IntegrityError seen in issue 11). Even one daemon at a time is
  unsafe that way (a WAL left by a kill under one name is ignored under the other), so no lock
  keyed by inode could make a second name safe; refusing it is the honest answer.
With one name per file, the lock file beside the resolved name is unique to the file (bind mounts
reach the same directory entry, hence the same lock file). The lock file records `pid dev:ino`.

Why not flock on the database file itself: closing *any* descriptor of a file drops every POSIX
(fcntl) lock the process holds on it, and SQLite's locks are POSIX locks; a second descriptor
opened and closed by us beside SQLite's would silently drop them (and on NFS flock is emulated
with fcntl locks, which would then block SQLite's readers). A separate lock file touches nothing
of SQLite's. `anima restore` takes the same lock and keeps it while it swaps the file's inode, so
the lock's name staying put across a restore is what keeps a daemon from starting half-way.

The kernel drops the flock when the process dies, even on kill -9: there is no stale lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from engine.errors import LockedError, StoreAccessError

DEFAULT_REFUSAL = ("database {db} is already used by another anima daemon (pid {pid}); "
                   "stop it first or pass another --db")


def real_path(db_path: Path) -> Path:
    """The database's one real name: symlinks and relative spellings resolved (the file need not exist)."""
    return Path(os.path.realpath(db_path))


def lock_path(db_path: Path) -> Path:
    real = real_path(db_path)
    return real.with_name(real.name + ".lock")


def check_one_name(db_path: Path) -> None:
    """Refuse a database file that has other hard links: each name would get its own WAL (see module doc)."""
    try:
        st = os.stat(db_path)
    except FileNotFoundError:
        return
    if st.st_nlink > 1:
        raise LockedError(
            f"database {db_path} has {st.st_nlink} hard links (inode {st.st_ino}); SQLite keeps one WAL per "
            "name, so anima needs exactly one name per file: remove the other links (find / -samefile "
            f"{db_path}) or copy the file with anima export"
        )


class DaemonLock:
    def __init__(self, db_path: Path):
        self.db_path = Path(db_path)
        self.path = lock_path(db_path)
        self.fd: int | None = None

    def acquire(self, refusal: str = DEFAULT_REFUSAL) -> None:
        """Take the lock or raise LockedError with `refusal` ({db} and the holder's {pid} filled in)."""
        check_one_name(self.db_path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = _open_lock_file(self.path)
        except OSError as exc:  # EROFS, EACCES, ENOTDIR: an operator's fix; a restart would meet it again
            raise StoreAccessError(f"cannot open the lock file {self.path} ({exc.strerror}); the database's folder "
                                   "must be a writable directory for the daemon's user (a read-only filesystem?)"
                                   ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").split(" ")[0].strip() or "unknown"
            os.close(fd)
            raise LockedError(refusal.format(db=self.db_path, pid=holder)) from None
        try:
            check_one_name(self.db_path)  # a link made between the first check and the flock
        except LockedError:
            os.close(fd)
            raise
        _write_holder(fd, self.db_path)
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


def _open_lock_file(path: Path) -> int:
    """Open (creating 0640) the lock file. A lock file another user made (a root `anima restore`) is
    handed to the owner of its directory, and opened read-only if we may not write it: flock needs no
    write access, only the pid note is skipped."""
    created = not path.exists()
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
    except PermissionError:
        return os.open(path, os.O_RDONLY)
    if created and os.geteuid() == 0:
        folder = path.parent.stat()
        with contextlib.suppress(OSError):
            os.fchown(fd, folder.st_uid, folder.st_gid)
    return fd


def _write_holder(fd: int, db_path: Path) -> None:
    try:
        st = os.stat(db_path)
        identity = f"{st.st_dev}:{st.st_ino}"
    except FileNotFoundError:
        identity = "new"
    with contextlib.suppress(OSError):  # a read-only lock file (see _open_lock_file)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {identity}\n".encode(), 0)


def is_locked(db_path: Path) -> bool:
    """True when a daemon (or a restore) holds the database: for `anima status` and stale-job recovery."""
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
