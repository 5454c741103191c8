"""Structured logs: one event per line, stable dotted event names, key=value or JSON, journald priorities.

When systemd runs us, stderr goes to the journal (`JOURNAL_STREAM` is set); each line then starts
with the sd-daemon `<N>` priority prefix so `journalctl -p warning -u anima` filters by level.
Chat and life text never enter a log line: callers pass ids, lengths and counts.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, TextIO

import structlog

_PRIORITY = {"debug": 7, "info": 6, "warning": 4, "error": 3, "critical": 2, "exception": 3}
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def _journal_prefix(_logger: Any, method: str, rendered: str) -> str:
    return f"<{_PRIORITY.get(method, 6)}>{rendered}"


def configure_logging(fmt: str = "kv", level: str = "info", stream: TextIO | None = None) -> None:
    """Set up structlog for the whole process; safe to call again on SIGHUP reload."""
    under_journald = bool(os.environ.get("JOURNAL_STREAM"))
    processors: list[Any] = [structlog.processors.add_log_level]
    if not under_journald:
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
    if under_journald:
        processors.append(_journal_prefix)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level, logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: Any) -> Any:
    return structlog.get_logger().bind(**bound)
