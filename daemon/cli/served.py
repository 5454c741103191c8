"""How her file says she is served: the beat and the host her last `start` event recorded.

`anima status` and `anima doctor` read only her file. A directory host beats each companion every
[daemon] beat_s (60 s by default) and serves her on its own socket, not on one beside her file; both
are in her start event (daemon/app.prepare_database), so these commands judge her by the daemon that
actually runs her, not by this CLI's [heartbeat] interval_s (issue 25: status called a host's companion
dead 53 s after her 60 s beat, and doctor failed on a socket directory mode never makes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.settings import HeartbeatSettings
from engine.usecases.inspect import start_events


@dataclass(frozen=True)
class ServedBy:
    mode: str  # "file" (anima run --db) or "directory" (anima run --dir)
    beat_s: float | None  # her beat as that daemon runs it; None in files started before it was recorded
    socket: Path | None  # the host's API socket (directory mode)
    handle: str | None

    def is_fresh(self, age_s: float, default: HeartbeatSettings) -> bool:
        """A last beat this old still means a live daemon, by her own beat when it is known."""
        return (HeartbeatSettings(interval_s=self.beat_s) if self.beat_s else default).is_fresh(age_s)

    def health_path(self) -> str:
        return f"/v1/companions/{self.handle}/health" if self.mode == "directory" and self.handle else "/v1/health"


UNKNOWN = ServedBy(mode="file", beat_s=None, socket=None, handle=None)


def served_by(conn: Any) -> ServedBy:
    """From her last start event (UNKNOWN before her first start)."""
    starts = start_events(conn)
    if not starts:
        return UNKNOWN
    detail = starts[-1]["detail"]
    beat = detail.get("beat_s")
    socket = detail.get("socket")
    return ServedBy(mode=str(detail.get("mode") or "file"),
                    beat_s=float(beat) if isinstance(beat, (int, float)) and beat > 0 else None,
                    socket=Path(socket) if isinstance(socket, str) and socket else None,
                    handle=detail.get("handle") if isinstance(detail.get("handle"), str) else None)
