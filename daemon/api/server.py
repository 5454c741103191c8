"""The 'api' component: serves the HTTP app on the Unix socket (and optional loopback TCP) inside the daemon's loop.

Listed last in daemon/components.py so that every service it calls (embedder, inner life) is up
before the first request. Each heartbeat it expires share offers whose time ran out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aiohttp import web

from daemon.api.http import make_app
from daemon.api.listen import bind_unix, socket_path, tcp_address
from daemon.component import DaemonContext
from engine.errors import ConfigError
from engine.store.share import expire_offers


class ApiComponent:
    name = "api"

    def __init__(self, ctx: DaemonContext):
        self.runner: web.AppRunner | None = None
        self.socket_path: Path | None = None
        self._socket_inode: int | None = None
        self.tcp: tuple[str, int] | None = None

    async def start(self, ctx: DaemonContext) -> None:
        api = ctx.settings.api
        # Validate everything before binding anything: a bad TCP host refuses the start.
        tcp = tcp_address(api, os.environ)
        path = socket_path(api, ctx.db_path, os.environ)
        app = make_app(ctx, token=tcp[2] if tcp else None)
        sock = bind_unix(path, api.socket_mode, api.socket_group)
        self.socket_path = path
        self._socket_inode = path.stat().st_ino
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=5.0)
        try:
            await self.runner.setup()
            await web.SockSite(self.runner, sock).start()
            if tcp:
                try:
                    await web.TCPSite(self.runner, tcp[0], tcp[1], reuse_address=True).start()
                except OSError as exc:
                    raise ConfigError(f"[api] cannot listen on {tcp[0]}:{tcp[1]} ({exc.strerror}); pick another "
                                      "tcp_port or set tcp_port = 0") from None
                self.tcp = (tcp[0], tcp[1])
        except BaseException:
            await self.stop(ctx)  # closes the sites (and the socket they own)
            sock.close()
            raise
        ctx.log.info("api.listening", socket=str(path), mode=api.socket_mode, group=api.socket_group or None,
                     tcp=f"{tcp[0]}:{tcp[1]}" if tcp else None)

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
