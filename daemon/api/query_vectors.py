"""Query vectors of the lines a conversation's next short message will be read with, embedded while the user types.

A short message ("真的吗？") is recalled with the two turns before it (engine/usecases/chat.recall_query):
recall then embeds the whole query and each of its lines, four texts where a longer message needs
one, and on two cores that made those requests the tail of the chat endpoint (bench/chat.py: p95 ~100
ms before the upstream call against ~43 ms for a one-line query). The lines before the new message are
the user's last message and her reply, both known once the turn is recorded; so the chat route embeds
them right after the reply (the user is reading and typing) and keeps their vectors here, and the next
request embeds only what is new: the whole query and its last line.

A vector depends only on its text and the model, so a held one is exactly what a fresh call returns.
Held in memory only, a few entries, each for at most `ttl_s` of her clock; a forget empties it (a
forgotten turn's words must not stay behind, even as a vector), and so does her state being dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

CAPACITY = 32  # a companion has one user: a few conversations' last lines are plenty
TTL_S = 600.0  # a reply read for longer than ten minutes starts a new exchange more often than not


class QueryVectors:
    """A small LRU of query vectors by text, each valid for `ttl_s` from when it was put."""

    def __init__(self, capacity: int = CAPACITY, ttl_s: float = TTL_S):
        self.capacity = capacity
        self.ttl_s = ttl_s
        self._held: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        # Bumped by clear(): vectors embedded from texts read before a forget are not put after it.
        self.generation = 0

    def __len__(self) -> int:
        return len(self._held)

    def get(self, texts: Iterable[str], now: float) -> dict[str, Any]:
        """The held, unexpired vectors of `texts` (the others are simply absent)."""
        found: dict[str, Any] = {}
        for text in texts:
            held = self._held.get(text)
            if held is None:
                continue
            if now - held[0] > self.ttl_s:
                del self._held[text]
                continue
            self._held.move_to_end(text)
            found[text] = held[1]
        return found

    def put(self, vectors: Mapping[str, Any], now: float, generation: int | None = None) -> None:
        """Hold `vectors`; nothing when `generation` (read before they were embedded) is not current any more."""
        if generation is not None and generation != self.generation:
            return
        for text, vector in vectors.items():
            self._held[text] = (now, vector)
            self._held.move_to_end(text)
        while len(self._held) > self.capacity:
            self._held.popitem(last=False)

    def clear(self) -> None:
        self._held.clear()
        self.generation += 1
