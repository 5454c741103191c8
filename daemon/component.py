"""What a part of the daemon looks like to the main loop (start, stop), and the context the parts share.

Parts (inner life, memory, job worker, HTTP API) are listed in `daemon/components.py`; the main loop
starts them in order after recovery and stops them in reverse order on SIGTERM. A part has no beat of
its own: what happens every heartbeat is one step in daemon/beat.py's list, the same for a directory host.
What a part publishes for the others is a typed field of `DaemonContext`, not a string key.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from daemon.clock import Clock
from daemon.db import AsyncStore
from engine.control import Switches
from engine.memory.indexer import Drain
from engine.persona import Persona
from engine.settings import Settings
from engine.store.types import Conn

if TYPE_CHECKING:
    from daemon.priority import InteractiveGate


class JobSlots(Protocol):
    """The job worker as a beat sees it (daemon/worker.py: Worker in single-file mode, SharedWorker in a host)."""

    @property
    def owner(self) -> str: ...

    def has_room(self, handle: str | None) -> bool: ...

    def start_job(self, handle: str | None, ctx: DaemonContext, job: Any) -> None: ...


class ApiSteps(Protocol):
    """The API's share of a beat (daemon/api/server.ApiBeat): read her token digests, hand them to the token book."""

    def step(self, conn: Conn) -> Any: ...

    def apply(self, handle: str | None, ctx: DaemonContext, digests: Any) -> None: ...


class VectorIndexing(Protocol):
    """Her lagging-vector indexer as the API and the beat see it (daemon/memory_component.VectorIndexer,
    which imports this module, so it is named here by what it does)."""

    drain: Drain  # her watermark: memories below drain.indexed_upto have their vectors
    fresh: Any  # FreshEmbeddings: vectors a context request embeds itself, shared with the batch in flight

    def wake(self) -> None: ...

    def may_have_pending(self) -> bool: ...

    def pending(self, conn: Conn) -> int: ...



@dataclass
class DaemonContext:
    settings: Settings
    db_path: Path
    clock: Clock
    store: AsyncStore
    log: Any
    # Her switches as read at the last beat (or replaced by the API's own change): a new value each time,
    # never patched. `controls` is the same as a dict (old names too) for readers not yet converted.
    switches: Switches = field(default_factory=Switches.defaults)
    controls: dict[str, Any] = field(default_factory=dict)
    companion: dict[str, Any] | None = None
    started_at: float = 0.0
    last_beat_at: float = 0.0
    last_beat_mono: float = 0.0  # clock.monotonic() at the last beat: health ages it, wall steps cannot
    loop_lag_ms: float = 0.0
    # What parts publish for each other (a directory host sets the same for each companion):
    persona: Persona | None = None  # the life part: who she is, derived from her companion row
    last_beat_before_start: float | None = None  # her last beat before this start (recovery), for the life part
    status_summary: str = ""  # her state in a few words for systemd's STATUS= (the life step keeps it)
    embedder: Any = None  # the memory part: the one model handle (engine.memory.embed.Embedder)
    vector_indexer: VectorIndexing | None = None  # the memory part: fills lagging vectors, woken after a turn
    interactive_gate: InteractiveGate | None = None  # background embedding yields to replies (daemon/priority.py)
    forget_lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one forget of hers at a time
    worker: JobSlots | None = None  # the worker part (single-file mode): claims and runs her jobs
    api: ApiSteps | None = None  # the API part (single-file mode): its share of her beat

    def __post_init__(self) -> None:
        if not self.last_beat_mono:  # a new context counts as just beaten, like last_beat_at = now
            self.last_beat_mono = self.clock.monotonic()


class Component(Protocol):
    name: str

    async def start(self, ctx: DaemonContext) -> None: ...

    async def stop(self, ctx: DaemonContext) -> None: ...
