"""What a part of the daemon looks like to the main loop: start, one step per heartbeat, stop.

Parts (inner life, job worker, HTTP API) are listed in `daemon/components.py`; the main loop
starts them in order after recovery, calls `beat()` on every heartbeat with her time and the
elapsed time, and stops them in reverse order on SIGTERM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from daemon.clock import Clock
from daemon.db import AsyncStore
from engine.control import Switches
from engine.settings import Settings


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
    # Shared services that parts publish for each other (e.g. "embedder", "life", "worker").
    services: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.last_beat_mono:  # a new context counts as just beaten, like last_beat_at = now
            self.last_beat_mono = self.clock.monotonic()


class Component(Protocol):
    name: str

    async def start(self, ctx: DaemonContext) -> None: ...

    async def beat(self, ctx: DaemonContext, now: float, dt: float) -> None: ...

    async def stop(self, ctx: DaemonContext) -> None: ...
