"""Structured logs: one event per line, stable dotted event names, key=value or JSON, journald priorities.

When systemd runs us, stderr goes to the journal (`JOURNAL_STREAM` is set); each line then starts
with the sd-daemon `<N>` priority prefix so `journalctl -p warning -u anima` filters by level. The
one-line `anima: ...` a fatal error prints goes through `fatal_line` for the same reason.
Chat and life text never enter a log line: callers pass ids, lengths and counts.

Reconfiguring (SIGHUP) must reach loggers that were bound long before: structlog hands each bound
logger the processor list object itself, so we keep ONE list and change its contents in place, and
the level is a processor reading the current threshold rather than a wrapper class fixed at bind.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import threading
from typing import Any, TextIO

import structlog

_PRIORITY = {"debug": 7, "info": 6, "warning": 4, "error": 3, "critical": 2, "exception": 3}
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_METHOD_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
                  "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL}

_PROCESSORS: list[Any] = []  # shared by every bound logger; replaced in place on reconfigure
_threshold = logging.INFO


def under_journald() -> bool:
    return bool(os.environ.get("JOURNAL_STREAM"))


def _journal_prefix(_logger: Any, method: str, rendered: str) -> str:
    return f"<{_PRIORITY.get(method, 6)}>{rendered}"


def _filter_level(_logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    if _METHOD_LEVELS.get(method, logging.INFO) < _threshold:
        raise structlog.DropEvent
    return event


class SurvivingStream:
    """The log's stream, which outlives its reader: when the pipe behind stderr closes (`anima run 2>&1 | head`,
    `| tee` and Ctrl-C, a journald restart) the daemon goes on serving, silently, instead of dying on the next
    log line (issue 25: it exited 0 mid-start-up, leaving a stale socket). The first EPIPE points the
    descriptor at /dev/null, so Python's own late writes to it (at exit, warnings) cannot fail either."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.lost = False
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        if self.lost:
            return len(text)
        try:
            return self.stream.write(text)
        except OSError as exc:
            self._reader_gone(exc)
            return len(text)

    def flush(self) -> None:
        if self.lost:
            return
        try:
            self.stream.flush()
        except OSError as exc:
            self._reader_gone(exc)

    def _reader_gone(self, exc: OSError) -> None:
        if exc.errno not in (errno.EPIPE, errno.ECONNRESET) and not isinstance(exc, BrokenPipeError):
            raise exc
        with self._lock:
            self.lost = True
            try:
                fd = self.stream.fileno()
                devnull = os.open(os.devnull, os.O_WRONLY)
                try:
                    os.dup2(devnull, fd)
                finally:
                    os.close(devnull)
                self.stream.flush()  # what was buffered goes to /dev/null now
            except (OSError, ValueError):
                pass


def configure_logging(fmt: str = "kv", level: str = "info", stream: TextIO | None = None) -> None:
    """Set up structlog for the whole process; calling it again (SIGHUP) changes already-bound loggers too."""
    global _threshold
    journald = under_journald()
    processors: list[Any] = [_filter_level, structlog.processors.add_log_level]
    if not journald:
        # journald stamps every line itself; elsewhere we add an ISO timestamp.
        processors.append(structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"))
    processors.append(structlog.processors.format_exc_info)
    if fmt == "json":
        processors.append(structlog.processors.JSONRenderer(ensure_ascii=False, sort_keys=False))
    else:
        processors.append(
            structlog.processors.LogfmtRenderer(
                key_order=["event", "level"], drop_missing=True, bool_as_flag=False
            )
        )
    if journald:
        processors.append(_journal_prefix)
    _threshold = _LEVELS.get(level, logging.INFO)
    _PROCESSORS[:] = processors
    structlog.configure(
        processors=_PROCESSORS,
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),  # _filter_level decides
        logger_factory=structlog.PrintLoggerFactory(SurvivingStream(stream or sys.stderr)),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: Any) -> Any:
    return structlog.get_logger().bind(**bound)


def fatal_line(message: str, priority: int = 3) -> str:
    """The one line a fatal error prints on stderr: `anima: ...`, with `<3>` (err) under journald."""
    line = f"anima: {message}"
    return f"<{priority}>{line}" if under_journald() else line
