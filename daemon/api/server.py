"""The API server: the HTTP app of a CompanionRegistry on the Unix socket (and optional loopback TCP), in the daemon's loop.

`ApiServer(registry, settings, log, path)` serves every companion of the registry with one socket:
daemon/host.py starts ONE for a whole directory; its share of each companion's heartbeat (her token
digests re-read) is a step of daemon/beat.py, handed to the token book by daemon/companion_beat.ApiBeat.
The 'api' component (`build`) is single-file mode's: the same server
over SingleCompanion(ctx), listed last in daemon/components.py so that every service it calls
(embedder, inner life) is up before the first request. Connections come in through
daemon/api/gate.py (limits, shedding, head timeout) and are served by daemon/api/protocol.py's quiet
handler (JSON refusals, no request bytes in any log).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aiohttp import web

from daemon.api.gate import ConnectionGate, GatedSite, connection_limit, linger_capacity
from daemon.api.http import APP, make_app
from daemon.api.listen import bind_tcp, bind_unix, socket_path, tcp_address
from daemon.api.protocol import QuietAppRunner
from daemon.companion_beat import ApiBeat
from daemon.component import DaemonContext
from daemon.registry import CompanionRegistry, SingleCompanion
from engine import model_config


class ApiServer:
    """One HTTP server for the companions of a registry: binds, serves, and stops (removing its socket)."""

    def __init__(self, registry: CompanionRegistry, settings: Any, log: Any, path: Path):
        self.registry = registry
        self.settings = settings
        self.log = log
        self.socket_path = path
        self.runner: web.AppRunner | None = None
        self.app: web.Application | None = None
        self._socket_inode: int | None = None
        self.tcp: tuple[str, int] | None = None
        self.gates: list[ConnectionGate] = []  # one per listening socket (tests and benches read its counters)

    async def start(self) -> None:
        api = self.settings.api
        # Validate everything before binding anything: a bad TCP host refuses the start.
        tcp = tcp_address(api, os.environ)
        path = self.socket_path
        self.app = make_app(self.registry, self.settings, self.log, token=tcp[2] if tcp else None)
        sock = bind_unix(path, api.socket_mode, api.socket_group)
        self._socket_inode = path.stat().st_ino
        self.runner = QuietAppRunner(self.app, log=self.log, handle_signals=False, shutdown_timeout=5.0)
        limit = connection_limit(api.max_connections, api.fd_reserve)
        gate = {"limit": limit, "header_timeout_s": api.header_timeout_s, "log": self.log,
                "error_log_interval_s": api.error_log_interval_s,
                "linger_cap": linger_capacity(limit, api.fd_reserve)}
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
            await self.stop()  # closes the sites (and the sockets they own)
            sock.close()
            raise
        deprecated = model_config.deprecation(self.app[APP].model)
        if deprecated is not None:  # key names only: a base_url may carry a key
            self.log.warning("config.deprecated", **deprecated)
        self.log.info("api.listening", socket=str(path), mode=api.socket_mode, group=api.socket_group or None,
                      tcp=f"{tcp[0]}:{tcp[1]}" if tcp else None, max_connections=limit)

    def companion_stopped(self, handle: str) -> None:
        """She is no longer served (file removed, .stop marker, fault): drop her ApiState and token digests now,
        so her caches and context do not outlive her (a request for her would also drop them, lazily)."""
        if self.app is not None:
            self.app[APP].forget(handle)

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()  # the requests in flight end first: they may start background work
            self.runner = None
        if self.app is not None:
            await self.app[APP].cancel_background()
        path = self.socket_path
        try:
            if self._socket_inode is not None and path.stat().st_ino == self._socket_inode:
                path.unlink()
        except FileNotFoundError:
            pass
        self.log.info("api.stopped")


class ApiComponent:
    """Single-file mode's 'api' part: an ApiServer over SingleCompanion(ctx) on the socket beside her file."""

    name = "api"

    def __init__(self, ctx: DaemonContext):
        self.server: ApiServer | None = None

    @property
    def socket_path(self) -> Path | None:
        return self.server.socket_path if self.server else None

    @property
    def tcp(self) -> tuple[str, int] | None:
        return self.server.tcp if self.server else None

    @property
    def gates(self) -> list[ConnectionGate]:
        return self.server.gates if self.server else []

    async def start(self, ctx: DaemonContext) -> None:
        path = socket_path(ctx.settings.api, ctx.db_path, os.environ)
        self.server = ApiServer(SingleCompanion(ctx), ctx.settings, ctx.log, path)
        await self.server.start()
        ctx.api = ApiBeat(self.server)  # her beat's "api" step (daemon/beat.py), handle None: SINGLE

    async def stop(self, ctx: DaemonContext) -> None:
        ctx.api = None
        if self.server is not None:
            await self.server.stop()


def build(ctx: DaemonContext) -> Any:
    return ApiComponent(ctx)
