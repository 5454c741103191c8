"""The process's in-RAM copies of what database files hold: one owner, one staleness rule and one byte budget.

The rule: a cached value serves one database file, by identity (its path, device and inode, so a
file replaced at the same path, as `anima restore` does, is a different file), and one fingerprint
that its holder computes from the file's content with a cheap query (counts, max ids, sums, the
forget generation). A different file or a different fingerprint rebuilds the value; nothing else
does. `PRAGMA data_version` cannot be the rule: it does not move for the connection's own commits,
and the daemon reads and writes through one connection.

The budget: one daemon may serve a thousand companion files, and each one's vector matrix alone is
1.5 KB a memory, so what is kept is bounded in bytes, not in files: every registered cache shares
one `CacheBudget` (`set_budget(bytes)`, from `[daemon] cache_budget_mb`, default 256). Past it the
least recently used FILE loses its values in every cache (a companion's matrices are used together,
by one context request), until the rest fits. A value bigger than the whole budget is built, used
and not kept. Sizes are measured at each touch (`value_bytes`), because two holders grow their
value in place (the vector matrix gains rows, the term counts fill up): a growth counts from the
next touch of that file.

Holders register one `FileCache` each under a name (`caches()` lists them, `drop_file(conn)`
empties every one for a file, `stats()` gives hits, misses, evictions and bytes for health and
benches). An in-memory database is keyed by its connection: nothing else names it.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from engine.errors import ConfigError
from engine.store.connect import database_file

T = TypeVar("T")
FileKey = tuple[Any, ...]
EntryKey = tuple[FileKey, Hashable]

DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024  # [daemon] cache_budget_mb's default
_SAMPLE = 32  # items sampled to size a container: sizing must cost O(1), a value is re-measured at each touch


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


def value_bytes(value: Any, depth: int = 3) -> int:
    """An estimate of the RAM `value` holds: exact for numpy arrays and bytes, sampled for containers.

    The big values are numpy matrices (nbytes: their whole buffer, spare capacity included) and the
    term counts dict (tens of thousands of short strings): a container is sized from its first
    items times its length, so measuring stays cheap enough to repeat at every touch.
    """
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):  # numpy arrays (a view counts its own extent, which is what it keeps alive)
        return nbytes + 112
    size = sys.getsizeof(value)
    if depth <= 0 or isinstance(value, (str, bytes, bytearray, int, float, bool)) or value is None:
        return size
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return size + sum(value_bytes(getattr(value, f.name), depth - 1) for f in dataclasses.fields(value))
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        try:  # another thread may be filling it (the term counts): then sized by its slots alone
            sample = list(itertools.islice(value.items() if isinstance(value, dict) else value, _SAMPLE))
        except RuntimeError:
            return size
        if not sample:
            return size
        if isinstance(value, dict):
            sampled = sum(value_bytes(k, depth - 1) + value_bytes(v, depth - 1) for k, v in sample)
        else:
            sampled = sum(value_bytes(v, depth - 1) for v in sample)
        return size + sampled * len(value) // len(sample)
    return size


@dataclass(frozen=True)
class CacheStats:
    """Counters of one cache (or of all of them): for /v1/health, doctor and benches.

    hits: reads served from a held value; misses: values built (a holder's put, or a get that had to
    build); evictions: values dropped to stay under the budget; rejected: values built bigger than the
    whole budget (used once, not kept); bytes_held and entries: what is held now; files: how many
    database files have a value held.
    """

    hits: int
    misses: int
    evictions: int
    rejected: int
    bytes_held: int
    entries: int
    files: int
    budget_bytes: int


class CacheBudget:
    """One byte budget shared by several FileCaches, with least-recently-used eviction by file.

    It owns the one lock of every cache that shares it: an eviction for a new value of one cache
    empties another cache's entries, atomically with the insert.
    """

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES):
        _check_budget(budget_bytes)
        self.budget_bytes = budget_bytes
        self.lock = threading.RLock()
        # file identity -> {(cache, entry key): bytes}, least recently used first
        self._files: OrderedDict[FileKey, dict[tuple[FileCache[Any], EntryKey], int]] = OrderedDict()
        self.bytes_held = 0

    def set_budget(self, budget_bytes: int) -> None:
        """Change the budget now (the host at start and on reload), evicting what no longer fits."""
        _check_budget(budget_bytes)
        with self.lock:
            self.budget_bytes = budget_bytes
            self._evict_locked()

    def touch(self, cache: FileCache[Any], key: EntryKey, nbytes: int) -> None:
        """Record a use of `cache`'s entry `key` now holding `nbytes`: its file becomes the most recent;
        then evict the least recent files until the total fits (this one last: only when it alone is over)."""
        with self.lock:
            entries = self._files.get(key[0])
            if entries is None:
                entries = self._files[key[0]] = {}
            else:
                self._files.move_to_end(key[0])
            self.bytes_held += nbytes - entries.get((cache, key), 0)
            entries[(cache, key)] = nbytes
            self._evict_locked()

    def forget(self, cache: FileCache[Any], key: EntryKey) -> None:
        """`cache` no longer holds `key` (dropped, replaced by another file, cleared)."""
        with self.lock:
            entries = self._files.get(key[0])
            if entries is None:
                return
            self.bytes_held -= entries.pop((cache, key), 0)
            if not entries:
                del self._files[key[0]]

    def _evict_locked(self) -> None:
        """Drop whole files, least recently used first, until the held bytes fit. The file just used is
        the most recent, so it goes only when it alone is over the budget (grown in place past it): its
        value serves the read in progress and is not kept, like any value bigger than the budget."""
        while self.bytes_held > self.budget_bytes and self._files:
            _, entries = self._files.popitem(last=False)
            for (cache, key), nbytes in entries.items():
                self.bytes_held -= nbytes
                cache._evicted_locked(key)


def _check_budget(budget_bytes: int) -> None:
    if not isinstance(budget_bytes, int) or isinstance(budget_bytes, bool) or budget_bytes < 0:
        raise ConfigError(f"[daemon] cache_budget_mb must give a whole number of bytes >= 0, got {budget_bytes!r} bytes")


class FileCache(Generic[T]):
    """Values derived from database files, each kept for one file identity, one part and one fingerprint.

    `part` tells apart several values of one file (the fact matrix per vector dimension). What is
    kept is bounded by `budget` (the process's shared one for registered caches; a cache of its own
    otherwise, for tests).
    """

    def __init__(self, name: str, budget: CacheBudget | None = None):
        self.name = name
        self.budget = budget if budget is not None else CacheBudget()
        self.builds = 0  # how many times a value was (re)built: for tests and benches
        self.hits = 0
        self.evictions = 0
        self.rejected = 0
        self._lock = self.budget.lock
        self._values: dict[EntryKey, tuple[Hashable, T]] = {}
        self._peeked: set[EntryKey] = set()  # keys whose last read was a peek counted as a hit

    def get(self, conn: Any, part: Hashable, fingerprint: Hashable, build: Callable[[], T]) -> T:
        """The cached value when the file and fingerprint are unchanged; else `build()`, kept if it fits."""
        key = (file_identity(conn), part)
        with self._lock:
            held = self._values.get(key)
            if held is not None and held[0] == fingerprint:
                self.hits += 1
                self._peeked.discard(key)
                self.budget.touch(self, key, value_bytes(held[1]))
                return held[1]
        value = build()
        self._keep(key, fingerprint, value)
        return value

    def peek(self, conn: Any, part: Hashable) -> tuple[Hashable, T] | None:
        """(fingerprint, value) held for `conn`'s file and `part`, or None: for a holder that updates its
        value in place (the vector matrix grows by the rows added since) and judges staleness itself.

        A value found counts as a hit unless the holder then replaces it (`put`): then it was a miss."""
        key = (file_identity(conn), part)
        with self._lock:
            held = self._values.get(key)
            if held is not None:
                self.hits += 1
                self._peeked.add(key)
                self.budget.touch(self, key, value_bytes(held[1]))
            return held

    def put(self, conn: Any, part: Hashable, fingerprint: Hashable, value: T) -> None:
        """Hold `value` for `conn`'s file and `part` under `fingerprint` (a build by the holder), dropping
        what an older file at this path held; a value bigger than the whole budget is not kept."""
        key = (file_identity(conn), part)
        with self._lock:
            if key in self._peeked:  # the value the peek found was stale: that read was a miss
                self._peeked.discard(key)
                self.hits -= 1
        self._keep(key, fingerprint, value)

    def _keep(self, key: EntryKey, fingerprint: Hashable, value: T) -> None:
        nbytes = value_bytes(value)
        with self._lock:
            self.builds += 1
            self._drop_locked(key)
            self._drop_replaced_locked(key[0])
            if nbytes > self.budget.budget_bytes:
                self.rejected += 1
                return
            self._values[key] = (fingerprint, value)
            self.budget.touch(self, key, nbytes)

    def clear(self) -> None:
        """Forget every value of every file (benches measuring cold caches)."""
        with self._lock:
            for key in list(self._values):
                self._drop_locked(key)

    def drop(self, conn: Any) -> None:
        """Forget every value of `conn`'s file (its memory is freed now, not at the next read)."""
        identity = file_identity(conn)
        with self._lock:
            for key in [k for k in self._values if k[0] == identity]:
                self._drop_locked(key)

    def stats(self) -> CacheStats:
        """This cache's counters and what it holds now."""
        with self._lock:
            held = sum(self.budget._files[k[0]].get((self, k), 0) for k in self._values if k[0] in self.budget._files)
            return CacheStats(self.hits, self.builds, self.evictions, self.rejected, held, len(self._values),
                              len({k[0] for k in self._values}), self.budget.budget_bytes)

    def _drop_locked(self, key: EntryKey) -> None:
        self._peeked.discard(key)
        if self._values.pop(key, None) is not None:
            self.budget.forget(self, key)

    def _drop_replaced_locked(self, identity: FileKey) -> None:
        """Drop the values of an older file at this path (replaced by a restore): never served again."""
        if identity[0] != "memory":
            for key in [k for k in self._values if k[0][0] == identity[0] and k[0] != identity]:
                self._drop_locked(key)

    def _evicted_locked(self, key: EntryKey) -> None:
        """The budget dropped `key` (it already took its bytes off)."""
        self._peeked.discard(key)
        if self._values.pop(key, None) is not None:
            self.evictions += 1

    def __len__(self) -> int:
        return len(self._values)


_BUDGET = CacheBudget()
_REGISTRY: dict[str, FileCache[Any]] = {}


def file_cache(name: str) -> FileCache[Any]:
    """The process's cache called `name`, made on first use under the shared budget (a module asks for its
    own once, at import)."""
    if name not in _REGISTRY:
        _REGISTRY[name] = FileCache(name, _BUDGET)
    return _REGISTRY[name]


def caches() -> dict[str, FileCache[Any]]:
    """Every registered cache by name."""
    return dict(_REGISTRY)


def set_budget(budget_bytes: int) -> None:
    """The byte budget of every registered cache together (`[daemon] cache_budget_mb` * 2**20): the host
    calls it at start and on reload; lowering it evicts now."""
    _BUDGET.set_budget(budget_bytes)


def budget_bytes() -> int:
    """The shared budget now, in bytes."""
    return _BUDGET.budget_bytes


def stats() -> dict[str, CacheStats]:
    """Counters per registered cache, and "total" over all of them (what the budget bounds)."""
    per = {name: cache.stats() for name, cache in sorted(_REGISTRY.items())}
    with _BUDGET.lock:
        per["total"] = CacheStats(
            hits=sum(s.hits for s in per.values()), misses=sum(s.misses for s in per.values()),
            evictions=sum(s.evictions for s in per.values()), rejected=sum(s.rejected for s in per.values()),
            bytes_held=_BUDGET.bytes_held, entries=sum(s.entries for s in per.values()),
            files=len(_BUDGET._files), budget_bytes=_BUDGET.budget_bytes)
    return per


def drop_file(conn: Any) -> None:
    """Empty every registered cache of `conn`'s file."""
    for cache in _REGISTRY.values():
        cache.drop(conn)
