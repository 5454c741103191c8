"""The process's in-RAM copies of what a database file holds: one owner and one rule for when a copy is stale.

The rule: a cached value serves one database file, by identity (its path, device and inode, so a
file replaced at the same path, as `anima restore` does, is a different file), and one fingerprint
that its holder computes from the file's content with a cheap query (counts, max ids, sums, the
forget generation). A different file or a different fingerprint rebuilds the value; nothing else
does. `PRAGMA data_version` cannot be the rule: it does not move for the connection's own commits,
and the daemon reads and writes through one connection.

Holders register one `FileCache` each under a name (`caches()` lists them, `drop_file(conn)`
empties every one for a file). An in-memory database is keyed by its connection: nothing else
names it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from engine.store.connect import database_file

T = TypeVar("T")
FileKey = tuple[Any, ...]


def file_identity(conn: Any) -> FileKey:
    """(path, device, inode) of the file behind `conn`; ("memory", id) for an in-memory database."""
    path = database_file(conn)
    if path is None:
        return ("memory", id(conn))
    try:
        st = os.stat(path)
    except OSError:  # the file is gone under an open connection: the connection still reads the old one
        return (path, None, None)
    return (path, st.st_dev, st.st_ino)


class FileCache(Generic[T]):
    """Values derived from database files, each kept for one file identity, one part and one fingerprint.

    `part` tells apart several values of one file (the fact matrix per vector dimension). The
    oldest file is dropped past `max_files`: a process opens few files (tests and benches open many).
    """

    def __init__(self, name: str, max_files: int = 8):
        self.name = name
        self.max_files = max_files
        self.builds = 0  # how many times a value was (re)built: for tests and benches
        self._lock = threading.Lock()
        self._values: dict[tuple[FileKey, Hashable], tuple[Hashable, T]] = {}

    def get(self, conn: Any, part: Hashable, fingerprint: Hashable, build: Callable[[], T]) -> T:
        """The cached value when the file and fingerprint are unchanged; else `build()`, cached."""
        key = (file_identity(conn), part)
        with self._lock:
            held = self._values.get(key)
        if held is not None and held[0] == fingerprint:
            return held[1]
        value = build()
        with self._lock:
            self.builds += 1
            self._values.pop(key, None)
            self._drop_stale_locked(key[0])
            self._values[key] = (fingerprint, value)
        return value

    def peek(self, conn: Any, part: Hashable) -> tuple[Hashable, T] | None:
        """(fingerprint, value) held for `conn`'s file and `part`, or None: for a holder that updates its
        value in place (the vector matrix grows by the rows added since) and judges staleness itself."""
        key = (file_identity(conn), part)
        with self._lock:
            return self._values.get(key)

    def put(self, conn: Any, part: Hashable, fingerprint: Hashable, value: T) -> None:
        """Hold `value` for `conn`'s file and `part` under `fingerprint` (a build by the holder), dropping
        what an older file at this path held."""
        key = (file_identity(conn), part)
        with self._lock:
            self.builds += 1
            self._values.pop(key, None)
            self._drop_stale_locked(key[0])
            self._values[key] = (fingerprint, value)

    def clear(self) -> None:
        """Forget every value of every file (benches measuring cold caches)."""
        with self._lock:
            self._values.clear()

    def _drop_stale_locked(self, identity: FileKey) -> None:
        """Drop the values of an older file at this path (replaced), then the oldest files past max_files."""
        if identity[0] != "memory":
            for key in [k for k in self._values if k[0][0] == identity[0] and k[0] != identity]:
                del self._values[key]
        files = list(dict.fromkeys(k[0] for k in self._values))
        if identity not in files and len(files) >= self.max_files:
            for key in [k for k in self._values if k[0] == files[0]]:
                del self._values[key]

    def drop(self, conn: Any) -> None:
        """Forget every value of `conn`'s file (its memory is freed now, not at the next read)."""
        identity = file_identity(conn)
        with self._lock:
            for key in [k for k in self._values if k[0] == identity]:
                del self._values[key]

    def __len__(self) -> int:
        return len(self._values)


_REGISTRY: dict[str, FileCache[Any]] = {}


def file_cache(name: str, max_files: int = 8) -> FileCache[Any]:
    """The process's cache called `name`, made on first use (a module asks for its own once, at import)."""
    if name not in _REGISTRY:
        _REGISTRY[name] = FileCache(name, max_files)
    return _REGISTRY[name]


def caches() -> dict[str, FileCache[Any]]:
    """Every registered cache by name."""
    return dict(_REGISTRY)


def drop_file(conn: Any) -> None:
    """Empty every registered cache of `conn`'s file."""
    for cache in _REGISTRY.values():
        cache.drop(conn)
