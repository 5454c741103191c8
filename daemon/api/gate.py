"""The connection gate: the API accepts its own connections, so a flood of idle clients can exhaust neither the fds nor the health check.

asyncio's own accept loop, at the file-descriptor limit, reports every failed accept() with a
traceback and leaves the pending connections in the backlog, so every request times out while the
log fills (issue 11: 1,100 idle connections at a 1024 limit wrote 163 MB in 20 s). The gate instead:

- holds at most `limit` connections (the configured [api] max_connections, capped below the process's
  RLIMIT_NOFILE with [api] fd_reserve descriptors left for SQLite, the log and the model);
- when full, refuses the oldest connection that is idle (waiting for a request, none parsed or running, no
  unread bytes): it is answered the same 503 and half-closed, lingers LINGER_S (1 s) so a request the client
  sends meanwhile reads that 503 (never a reset), and is then closed. An idle client costs a reconnect, a
  working one is never cut, a request is either run and answered or refused with 503 before it runs (issue
  25: closing a connection whose request aiohttp had taken but not yet started ran the turn and dropped its
  answer), and a fresh /v1/health always gets in;
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
MAX_LINGERING = 4096
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
    room = _descriptor_room(fd_reserve, soft_nofile, open_fds)
    return max_connections if room is None else max(MIN_CONNECTIONS, min(max_connections, room))


def _descriptor_room(fd_reserve: int, soft_nofile: int | None, open_fds: int | None) -> int | None:
    """Descriptors this process may still open beyond `fd_reserve`; None when its limit is infinite."""
    if soft_nofile is None:
        soft_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_nofile == resource.RLIM_INFINITY:
        return None
    if open_fds is None:
        open_fds = _open_fds()
    return soft_nofile - open_fds - fd_reserve


LINGER_S = 1.0  # an evicted connection stays half-closed this long, so its client reads the 503, not a reset


def linger_capacity(limit: int, fd_reserve: int, soft_nofile: int | None = None, open_fds: int | None = None) -> int:
    """How many refused sockets may linger at once: the descriptors left after the limit and the reserve
    (beyond that a refusal closes at once, which may reset its client, rather than risk EMFILE)."""
    room = _descriptor_room(fd_reserve, soft_nofile, open_fds)
    return MAX_LINGERING if room is None else max(0, min(MAX_LINGERING, room - limit))


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 64


def is_idle(handler: Any) -> bool:
    """Waiting for its next request with none queued, none running and no unread bytes: refusing it loses nothing.

    aiohttp's start loop awaits `_waiter` only while it has nothing to do. Between taking a parsed request
    off `_messages` and starting its handler task (a loop turn on Python 3.11) neither `_messages` nor
    `_request_in_progress` shows the request, but `_waiter` is None: that connection is busy.
    """
    if getattr(handler, "_request_in_progress", False) or getattr(handler, "_messages", None):
        return False
    waiter = getattr(handler, "_waiter", None)
    if waiter is None or waiter.done():
        return False
    return not has_unread_bytes(getattr(handler, "gate_socket", None))


def has_unread_bytes(sock: socket.socket | None) -> bool:
    """Bytes the client sent that the loop has not read yet (a request on its way in)."""
    if sock is None:
        return False
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return False  # reset or closed: nothing of it can run


class ConnectionGate:
    """Accepts on one listening socket and hands connections to the aiohttp server within the limits above."""

    def __init__(self, server: web.Server, sock: socket.socket, *, limit: int, header_timeout_s: float,
                 log: Any, error_log_interval_s: float, backlog: int = 1024, linger_cap: int | None = None):
        self.server = server
        self.sock = sock
        self.limit = limit
        self.linger_cap = limit if linger_cap is None else linger_cap
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
        self._lingering: dict[socket.socket, asyncio.TimerHandle] = {}  # refused, half-closed, closing soon
        self._evicted_lingering = 0  # evicted idle connections still held open for LINGER_S

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
        for conn, timer in list(self._lingering.items()):
            timer.cancel()
            if self._loop is not None:
                self._loop.remove_reader(conn.fileno())
            conn.close()
        self._lingering.clear()
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
        self._refuse(conn, linger=False)
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
        """Refuse the oldest idle connection of this gate with a 503 and free its slot now (see the module doc)."""
        for handler in self.server.connections:  # insertion order: the oldest first
            closing = getattr(handler, "_force_close", False)
            if getattr(handler, "gate", None) is self and is_idle(handler) and not closing:
                self._linger_out(handler)
                self.evicted += 1
                return True
        return False

    def _linger_out(self, handler: Any) -> None:
        """Answer 503, half-close, ignore whatever arrives, close after LINGER_S; the slot is released at once."""
        handler.gate = None  # its close no longer counts: released here
        self.live -= 1
        handler._force_close = True  # aiohttp's data_received drops every byte from now on: nothing can run
        transport = getattr(handler, "transport", None)
        if transport is None or transport.is_closing():
            return
        try:
            transport.write(SHED_RESPONSE)
            if transport.can_write_eof():
                transport.write_eof()
        except OSError:
            handler.force_close()
            return
        if self._lingering_count() >= self.linger_cap:
            handler.force_close()  # idle: nothing unread, so closing now cannot reset; the fds are what is short
            return
        self._evicted_lingering += 1

        def finish() -> None:
            self._evicted_lingering -= 1
            handler.force_close()

        assert self._loop is not None
        self._loop.call_later(LINGER_S, finish)

    def _lingering_count(self) -> int:
        """Sockets held only to let a 503 be read (refused at accept, or evicted while idle): each holds a descriptor."""
        return len(self._lingering) + self._evicted_lingering

    def _refuse(self, conn: socket.socket, linger: bool = True) -> None:
        """Answer the fixed 503 at accept. The socket is half-closed and lingers (drained, unread) so the
        client's request, sent meanwhile, meets the 503 and not a reset (closing a socket with unread bytes
        resets it); at the fd limit (`linger` False) or with `linger_cap` sockets already lingering it closes now."""
        self.shed.hit(open=len(self.server.connections), limit=self.limit)
        try:
            conn.setblocking(False)
            conn.send(SHED_RESPONSE)
            if linger and self._loop is not None and self._lingering_count() < self.linger_cap:
                conn.shutdown(socket.SHUT_WR)
                self._linger(conn)
                return
        except OSError:
            pass
        conn.close()

    def _linger(self, conn: socket.socket) -> None:
        assert self._loop is not None
        loop = self._loop
        fd = conn.fileno()

        def finish() -> None:
            if conn in self._lingering:
                self._lingering.pop(conn).cancel()
                loop.remove_reader(fd)
                conn.close()

        def drain() -> None:
            try:
                while conn.recv(65536):
                    pass
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                pass
            finish()  # EOF or an error: the client is gone

        self._lingering[conn] = loop.call_later(LINGER_S, finish)
        loop.add_reader(fd, drain)

    def _protocol(self, conn: socket.socket) -> Any:
        handler = self.server()
        handler.gate = self  # type: ignore[attr-defined]
        handler.gate_socket = conn  # type: ignore[attr-defined]  # for is_idle's peek at unread bytes
        return handler

    async def _attach(self, conn: socket.socket) -> None:
        assert self._loop is not None
        try:
            _transport, protocol = await self._loop.connect_accepted_socket(lambda: self._protocol(conn), sock=conn)
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
                 log: Any, error_log_interval_s: float, linger_cap: int | None = None):
        super().__init__(runner)
        self._sock = sock
        self._limits = (limit, header_timeout_s, error_log_interval_s)
        self._linger_cap = linger_cap
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
                                   log=self._log, error_log_interval_s=interval_s, linger_cap=self._linger_cap)
        self.gate.start()

    async def stop(self) -> None:
        if self.gate is not None:
            self.gate.close()
            self.gate = None
        await super().stop()
