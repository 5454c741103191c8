"""A dict that keeps only its newest entries: process-wide caches that hold one entry per companion.

The life step's caches were single slots (the last context built, the last state read and written):
exact for one companion, and a miss on every beat of a host serving a thousand, whose beats
interleave. Keyed per companion instead, they need a bound; the oldest entry goes first (a host's
beats are round-robin, so the oldest is the companion least recently beaten).
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RecentMap(Generic[K, V]):
    """`get`/`put` over at most `limit` keys; safe to share between threads (a value read is whole or absent)."""

    def __init__(self, limit: int):
        if limit < 1:
            raise ValueError(f"a RecentMap keeps at least 1 entry, got {limit}")
        self.limit = limit
        self._items: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        items = self._items
        items.pop(key, None)  # re-inserted last: the newest
        items[key] = value
        while len(items) > self.limit:
            # Another thread may insert or evict meanwhile: then its eviction counts for ours.
            with contextlib.suppress(StopIteration, KeyError, RuntimeError):
                del items[next(iter(items))]
                continue
            break

    def __len__(self) -> int:
        return len(self._items)
