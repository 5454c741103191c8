"""The API's in-RAM map of companion tokens: sha256 digest -> companion, read from each companion's own file.

Tokens live in the companion's file (engine/store/tokens.py), so the map is derived data: a
companion's digests are read through her own ctx.store the first time a request names her (or when
she is served by a new context: a restarted or re-opened file), re-read at each of her heartbeats
(so `anima token` on a running daemon takes effect within one beat, like a switch), and the whole map
is rebuilt when the set of served companions changes (only to answer "whose token is this?", the
403 of a token of another companion).

Comparisons: the presented token is hashed first; her own digests are compared with
hmac.compare_digest, every one of them, so the time taken says nothing about how close a guess was.
The "whose token" lookup is a dict lookup on the digest: its timing can at most reveal something
about the sha256 of a guess, which does not help find a token.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any

from engine.usecases.tokens import digest_of, token_digests

NO_DIGESTS: frozenset[str] = frozenset()
# The key of single-file mode's companion (she is served under no handle).
SINGLE: str | None = None


def matches(digest: str, digests: frozenset[str]) -> bool:
    """True when `digest` is one of `digests`, comparing every one in constant time."""
    found = False
    for known in digests:
        found |= hmac.compare_digest(digest, known)
    return found


class TokenBook:
    """Digests per served companion (key: handle, or SINGLE), and the reverse map digest -> key."""

    def __init__(self) -> None:
        self._own: dict[str | None, tuple[Any, frozenset[str]]] = {}  # key -> (the ctx read from, digests)
        self._owner: dict[str, str | None] = {}
        self._served: tuple[tuple[str | None, int], ...] | None = None  # the registry as last indexed

    def known(self, key: str | None) -> frozenset[str]:
        """Her digests as last read (also for a companion that is not served right now), without reading."""
        entry = self._own.get(key)
        return entry[1] if entry else NO_DIGESTS

    async def of(self, key: str | None, ctx: Any) -> frozenset[str]:
        """Her digests, read from her file when this context has not been read yet."""
        entry = self._own.get(key)
        if entry is None or entry[0] is not ctx:
            return await self.reload(key, ctx)
        return entry[1]

    async def reload(self, key: str | None, ctx: Any) -> frozenset[str]:
        """Read her digests again (her heartbeat; a new context) and update the reverse map."""
        digests: frozenset[str] = await ctx.store.call(token_digests)
        self.read(key, ctx, digests)
        return digests

    def read(self, key: str | None, ctx: Any, digests: frozenset[str]) -> None:
        """Her digests as just read from her file through `ctx` (by reload, or by her heartbeat's own DB call)."""
        self._set(key, ctx, digests)

    def _set(self, key: str | None, ctx: Any, digests: frozenset[str]) -> None:
        for old in self.known(key) - digests:
            if self._owner.get(old, key) == key:
                self._owner.pop(old, None)
        self._own[key] = (ctx, digests)
        for digest in digests:
            self._owner[digest] = key

    def drop(self, key: str | None) -> None:
        """Forget her digests (she is no longer served)."""
        if key in self._own:
            self._set(key, None, NO_DIGESTS)
            del self._own[key]

    async def owner(self, digest: str, registry: Any) -> tuple[bool, str | None]:
        """(found, key) of the served companion whose token has this digest; the map is rebuilt first when
        the registry serves other companions (or other contexts) than when it was last built."""
        served = _served(registry)
        if served != self._served:
            contexts = {key: registry.single if key is SINGLE else registry.get(key) for key, _ in served}
            await asyncio.gather(*(self.of(key, ctx) for key, ctx in contexts.items() if ctx is not None))
            for key in [k for k in self._own if k not in contexts and (k is None or registry.fault(k) is None)]:
                self.drop(key)  # gone: her tokens open nothing any more (a faulted one's still guard her 503)
            self._served = served
        if digest in self._owner:
            return True, self._owner[digest]
        return False, None


def digest(token: str) -> str:
    """The digest of a presented token, as her file stores it."""
    return digest_of(token)


def _served(registry: Any) -> tuple[tuple[str | None, int], ...]:
    single = registry.single
    if single is not None:
        return ((SINGLE, id(single)),)
    return tuple((handle, id(registry.get(handle))) for handle in registry.handles())

