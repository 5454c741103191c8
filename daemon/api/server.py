"""The 'api' component: serves the HTTP app on the Unix socket (and optional loopback TCP) inside the daemon's loop.

Listed last in daemon/components.py so that every service it calls (embedder, inner life) is up
before the first request. Each heartbeat it expires share offers whose time ran out. Connections come
in through daemon/api/gate.py (limits, shedding, head timeout) and are served by daemon/api/protocol.py's
quiet handler (JSON refusals, no request bytes in any log).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aiohttp import web

from daemon.api.gate import ConnectionGate, GatedSite, connection_limit
from daemon.api.http import make_app
from daemon.api.listen import bind_tcp, bind_unix, socket_path, tcp_address
from daemon.api.protocol import QuietAppRunner
from daemon.component import DaemonContext
from engine.store.share import expire_offers


class ApiComponent:
    name = "api"

    def __init__(self, ctx: DaemonContext):
        self.runner: web.AppRunner | None = None
        self.socket_path: Path | None = None
        self._socket_inode: int | None = None
        self.tcp: tuple[str, int] | None = None
        self.gates: list[ConnectionGate] = []  # one per listening socket (tests and benches read its counters)

    async def start(self, ctx: DaemonContext) -> None:
        api = ctx.settings.api
        # Validate everything before binding anything: a bad TCP host refuses the start.
        tcp = tcp_address(api, os.environ)
        path = socket_path(api, ctx.db_path, os.environ)
        app = make_app(ctx, token=tcp[2] if tcp else None)
        sock = bind_unix(path, api.socket_mode, api.socket_group)
        self.socket_path = path
        self._socket_inode = path.stat().st_ino
        self.runner = QuietAppRunner(app, log=ctx.log, handle_signals=False, shutdown_timeout=5.0)
        limit = connection_limit(api.max_connections, api.fd_reserve)
        gate = {"limit": limit, "header_timeout_s": api.header_timeout_s, "log": ctx.log,
                "error_log_interval_s": api.error_log_interval_s}
        try:
            await self.runner.setup()
            sites = [GatedSite(self.runner, sock, **gate)]
            if tcp:
                sites.append(GatedSite(self.runner, bind_tcp(tcp[0], tcp[1]), **gate))
                self.tcp = (tcp[0], tcp[1])
            for site in sites:
                await site.start()
                assert site.gate is not None
                self.gates.append(site.gate)
        except BaseException:
            await self.stop(ctx)  # closes the sites (and the sockets they own)
            sock.close()
            raise
        ctx.log.info("api.listening", socket=str(path), mode=api.socket_mode, group=api.socket_group or None,
                     tcp=f"{tcp[0]}:{tcp[1]}" if tcp else None, max_connections=limit)

    async def beat(self, ctx: DaemonContext, now: float, dt: float) -> None:
        expired = await ctx.store.call(expire_offers, now)
        if expired:
            ctx.log.info("share.expired", count=expired)

    async def stop(self, ctx: DaemonContext) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
        path = self.socket_path
        if path is not None:
            try:
                if path.stat().st_ino == self._socket_inode:
                    path.unlink()
            except FileNotFoundError:
                pass
        ctx.log.info("api.stopped")


def build(ctx: DaemonContext) -> Any:
    return ApiComponent(ctx)
