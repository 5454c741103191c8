"""The connection gate: the API accepts its own connections, so a flood of idle clients can exhaust neither the fds nor the health check.

asyncio's own accept loop, at the file-descriptor limit, reports every failed accept() with a
traceback and leaves the pending connections in the backlog, so every request times out while the
log fills (issue 11: 1,100 idle connections at a 1024 limit wrote 163 MB in 20 s). The gate instead:

- holds at most `limit` connections (the configured [api] max_connections, capped below the process's
  RLIMIT_NOFILE with [api] fd_reserve descriptors left for SQLite, the log and the model);
- when full, closes the oldest connection that is idle (no request in progress): an idle client costs a
  reconnect, a working one is never cut, and a fresh /v1/health always gets in;
- when every connection is busy, answers the newcomer a fixed 503 and closes it (no parsing, no task);
- keeps one spare descriptor: on EMFILE it frees the spare, accepts and sheds one connection, takes the
  spare again, so the backlog drains instead of spinning;
- closes connections that have not sent a complete request head within [api] header_timeout_s;
- logs each kind of failure at most once per [api] error_log_interval_s, with a count.
"""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import socket
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

ACCEPTS_PER_WAKE = 64  # bounded work per readable event: the loop stays responsive under a connect storm
RESOURCE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
MIN_CONNECTIONS = 8
_SHED_BODY = b'{"error":{"code":"unavailable","message":"the daemon has too many open connections; retry"}}'
SHED_RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 b"Retry-After: 1\r\nContent-Length: " + str(len(_SHED_BODY)).encode() + b"\r\n\r\n" + _SHED_BODY)


class RateLimitedLog:
    """One warning per interval for a repeated failure, carrying how many times it happened."""

    def __init__(self, log: Any, event: str, interval_s: float, clock: Callable[[], float] = time.monotonic):
        self.log = log
        self.event = event
        self.interval_s = interval_s
        self.clock = clock
        self.pending = 0
        self.total = 0
        self.last_at: float | None = None

    def hit(self, **fields: Any) -> None:
        self.pending += 1
        self.total += 1
        now = self.clock()
        if self.last_at is None or now - self.last_at >= self.interval_s:
            self.log.warning(self.event, count=self.pending, interval_s=self.interval_s, **fields)
            self.pending = 0
            self.last_at = now

    def flush(self) -> None:
        if self.pending:
            self.log.warning(self.event, count=self.pending, interval_s=self.interval_s)
            self.pending = 0


def connection_limit(max_connections: int, fd_reserve: int, soft_nofile: int | None = None,
                     open_fds: int | None = None) -> int:
    """How many connections the gate holds: the setting, capped so `fd_reserve` descriptors stay free."""
    if soft_nofile is None:
        soft_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_nofile == resource.RLIM_INFINITY:
        return max_connections
    if open_fds is None:
        try:
            open_fds = len(os.listdir("/proc/self/fd"))
        except OSError:
            open_fds = 64
    return max(MIN_CONNECTIONS, min(max_connections, soft_nofile - open_fds - fd_reserve))


def is_idle(handler: Any) -> bool:
    """No request in progress and none queued: closing it loses nothing (aiohttp keeps these flags)."""
    return not getattr(handler, "_request_in_progress", False) and not getattr(handler, "_messages", None)


class ConnectionGate:
    """Accepts on one listening socket and hands connections to the aiohttp server within the limits above."""

    def __init__(self, server: web.Server, sock: socket.socket, *, limit: int, header_timeout_s: float,
                 log: Any, error_log_interval_s: float, backlog: int = 1024):
        self.server = server
        self.sock = sock
        self.limit = limit
        self.header_timeout_s = header_timeout_s
        self.backlog = backlog
        self.log = log
        self.accept_failed = RateLimitedLog(log, "api.accept_failed", error_log_interval_s)
        self.shed = RateLimitedLog(log, "api.connection_shed", error_log_interval_s)
        self.evicted = 0
        self.timed_out = 0
        self.live = 0  # admitted and not yet closed: counted from accept(), so a burst cannot overshoot
        self._spare: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.sock.setblocking(False)
        self.sock.listen(self.backlog)
        self._take_spare()
        self._resume()

    def close(self) -> None:
        """Stop accepting and close the listening socket; open connections are the server's to drain."""
        self._closed = True
        if self._loop is not None and self._reading:
            self._loop.remove_reader(self.sock.fileno())
            self._reading = False
        self.sock.close()
        if self._spare is not None:
            os.close(self._spare)
            self._spare = None
        self.accept_failed.flush()
        self.shed.flush()
        for task in list(self._tasks):
            task.cancel()

    def _take_spare(self) -> None:
        if self._spare is None:
            try:
                self._spare = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._spare = None

    def _resume(self) -> None:
        if not self._closed and not self._reading and self._loop is not None:
            self._loop.add_reader(self.sock.fileno(), self._on_readable)
            self._reading = True

    def _pause(self, seconds: float) -> None:
        if self._loop is not None and self._reading:
            self._loop.remove_reader(self.sock.fileno())
            self._reading = False
            self._loop.call_later(seconds, self._resume)

    def _on_readable(self) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                conn, _addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                self.accept_failed.hit(errno=errno.errorcode.get(exc.errno or 0, str(exc.errno)))
                if exc.errno in RESOURCE_ERRNOS and self._shed_with_spare():
                    continue
                self._pause(0.1)  # nothing to free: let the closes in flight land, then try again
                return
            self._admit(conn)

    def _shed_with_spare(self) -> bool:
        """At the fd limit: free the spare descriptor, accept one waiting client, answer 503, re-take the spare."""
        if self._spare is None:
            return False
        os.close(self._spare)
        self._spare = None
        try:
            conn, _addr = self.sock.accept()
        except OSError:
            self._take_spare()
            return False
        self._refuse(conn)
        self._take_spare()
        return True

    def released(self) -> None:
        """Called by the server (daemon/api/protocol.QuietServer) when an admitted connection has closed."""
        self.live -= 1

    def _admit(self, conn: socket.socket) -> None:
        if self.live >= self.limit and not self._evict_one():
            self._refuse(conn)
            return
        conn.setblocking(False)
        self.live += 1
        task = asyncio.ensure_future(self._attach(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _evict_one(self) -> bool:
        """Close the oldest idle connection of this gate; its slot frees when its close lands (released())."""
        for handler in self.server.connections:  # insertion order: the oldest first
            closing = getattr(handler, "_force_close", False)
            if getattr(handler, "gate", None) is self and is_idle(handler) and not closing:
                handler.force_close()
                self.evicted += 1
                return True
        return False

    def _refuse(self, conn: socket.socket) -> None:
        self.shed.hit(open=len(self.server.connections), limit=self.limit)
        try:
            conn.setblocking(False)
            conn.send(SHED_RESPONSE)
        except OSError:
            pass
        finally:
            conn.close()

    def _protocol(self) -> Any:
        handler = self.server()
        handler.gate = self  # type: ignore[attr-defined]
        return handler

    async def _attach(self, conn: socket.socket) -> None:
        assert self._loop is not None
        try:
            _transport, protocol = await self._loop.connect_accepted_socket(self._protocol, sock=conn)
        except OSError:
            conn.close()
            self.live -= 1
            return
        self._loop.call_later(self.header_timeout_s, self._head_deadline, protocol)

    def _head_deadline(self, handler: Any) -> None:
        """A connection that never completed a request head in time is closed (slow or silent clients)."""
        if getattr(handler, "_request_count", 1) == 0 and getattr(handler, "transport", None) is not None:
            self.timed_out += 1
            handler.force_close()


class GatedSite(web.BaseSite):
    """An aiohttp site whose connections come through a ConnectionGate instead of loop.create_server()."""

    def __init__(self, runner: web.BaseRunner, sock: socket.socket, *, limit: int, header_timeout_s: float,
                 log: Any, error_log_interval_s: float):
        super().__init__(runner)
        self._sock = sock
        self._limits = (limit, header_timeout_s, error_log_interval_s)
        self._log = log
        self.gate: ConnectionGate | None = None
        if sock.family == socket.AF_UNIX:
            self._name = f"http://unix:{sock.getsockname()}:"
        else:
            host, port = sock.getsockname()[:2]
            self._name = f"http://{host}:{port}"

    @property
    def name(self) -> str:
        return self._name

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        limit, header_timeout_s, interval_s = self._limits
        self.gate = ConnectionGate(server, self._sock, limit=limit, header_timeout_s=header_timeout_s,
                                   log=self._log, error_log_interval_s=interval_s)
        self.gate.start()

    async def stop(self) -> None:
        if self.gate is not None:
            self.gate.close()
            self.gate = None
        await super().stop()
