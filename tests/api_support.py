"""Helpers for the API tests: an in-process daemon context with the real 'api' component on a Unix socket.

`ApiHarness` migrates a temp database, creates her (engine.companion), opens the AsyncStore,
starts daemon.api.server's component on a short socket path under /tmp (Unix socket paths are
limited to 107 bytes), and gives a client session over aiohttp.UnixConnector. Time is a FakeClock.
`DirectoryHarness` does the same for a directory of companions: real files DIR/<handle>.db, one
AsyncStore each, a small in-test CompanionRegistry, and ONE daemon.api.server.ApiServer over it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from daemon.clock import FakeClock
from daemon.companion_beat import ApiBeat, CompanionBeat
from daemon.component import DaemonContext
from daemon.db import AsyncStore
from engine.companion import create_companion
from engine.home import her_settings
from engine.settings import ApiSettings, HeartbeatSettings, Settings
from engine.store import connect, migrate
from engine.store.core import controls, get_companion, read_switches

T0 = 1_780_000_000.0  # 2026-05-28, her clock in these tests
_TOKEN = re.compile(r"[\u4e00-\u9fff]|[a-z0-9]+")


class HashEmbedder:
    """A fast deterministic stand-in for e5: hashed CJK characters, bigrams and ASCII words, L2-normalised."""

    name = "test-hash-384"
    dim = 384

    def _one(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        tokens = _TOKEN.findall(text.lower())
        grams = tokens + [a + b for a, b in zip(tokens, tokens[1:], strict=False)]
        for gram in grams or ["∅"]:
            h = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if (h >> 20) & 1 else -1.0
        norm = float(np.linalg.norm(vec)) or 1.0
        return vec / norm

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_queries(texts)


class RecordingLog:
    """A structlog-like logger that keeps every event (to check that no text reaches a log line)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def _log(self, level: str, event: str, **kw: Any) -> None:
        self.events.append((level, event, kw))

    def debug(self, event: str, **kw: Any) -> None:
        self._log("debug", event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._log("info", event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._log("warning", event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._log("error", event, **kw)

    def text(self) -> str:
        return json.dumps(self.events, ensure_ascii=False, default=str)

    def named(self, event: str) -> list[dict[str, Any]]:
        return [kw for _, name, kw in self.events if name == event]


def make_database(path: Path, now: float = T0) -> None:
    conn = connect(path)
    try:
        migrate(conn, now)
        create_companion(conn, name="小安", birth_local="1998-04-12 09:30", tz="Asia/Shanghai", place="杭州",
                         sect=2, now=now)
    finally:
        conn.close()


class ApiHarness:
    def __init__(self, root: Path | None = None, *, api: ApiSettings | None = None, embedder: Any = None,
                 start: float = T0):
        self.root = root or Path(tempfile.mkdtemp(prefix="anima-api-"))
        self.db_path = self.root / "anima.db"
        self.sock_dir = Path(tempfile.mkdtemp(prefix="as-", dir="/tmp"))
        api = api or ApiSettings()
        if not api.socket_path:
            api = dataclasses.replace(api, socket_path=str(self.sock_dir / "a.sock"))
        self.settings = dataclasses.replace(Settings(), api=api)
        self.clock = FakeClock(start)
        self.embedder = embedder or HashEmbedder()
        self.log = RecordingLog()
        self.component: Any = None
        self.heart: CompanionBeat | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ctx: DaemonContext | None = None

    @property
    def socket_path(self) -> str:
        return self.settings.api.socket_path

    async def start(self) -> ApiHarness:
        from daemon.api.server import build

        self.ctx = await companion_context(self.settings, self.db_path, self.clock, self.log, self.embedder)
        self.component = build(self.ctx)
        await self.component.start(self.ctx)
        ctx = self.ctx
        self.heart = CompanionBeat(ctx, self.log, handle=None, worker=lambda: None, api=lambda: ctx.api)
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.socket_path))
        return self

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        if self.component is not None and self.ctx is not None:
            await self.component.stop(self.ctx)
        if self.ctx is not None:
            await self.ctx.store.close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)

    async def call(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
                   headers: dict[str, str] | None = None) -> tuple[int, Any]:
        assert self.session is not None
        data = raw if raw is not None else (None if body is None else json.dumps(body, ensure_ascii=False).encode())
        if data is not None and headers is None:
            headers = {"Content-Type": "application/json"}
        async with self.session.request(method, "http://anima" + path, data=data, headers=headers) as resp:
            text = await resp.read()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text.decode(errors="replace")

    async def db(self, fn: Any, *args: Any) -> Any:
        assert self.ctx is not None
        return await self.ctx.store.call(fn, *args)

    async def beat(self, seconds: float) -> None:
        """Advance her clock and run her heartbeat (daemon/beat.py's steps, as single-file mode runs them)."""
        assert self.heart is not None
        self.clock.advance(seconds)
        await self.heart.beat(self.clock.monotonic())


async def companion_context(settings: Settings, db_path: Path, clock: FakeClock, log: Any,
                            embedder: Any) -> DaemonContext:
    """A running companion as the daemon would hand it to the API: her file migrated, her store open."""
    if not db_path.exists():
        make_database(db_path, clock.now())
    store = await AsyncStore(db_path).open()
    companion = await store.call(get_companion)
    # her settings, as the daemon hands them: her city, zone and role from her file (engine/home.py)
    ctx = DaemonContext(settings=her_settings(settings, companion), db_path=db_path, clock=clock, store=store,
                        log=log, companion=companion, started_at=clock.now(), last_beat_at=clock.now())
    ctx.switches = await store.call(read_switches)
    ctx.controls = await store.call(controls)
    ctx.embedder = embedder
    return ctx


class TestRegistry:
    """A CompanionRegistry of a directory, as daemon/host.py keeps one: served contexts and faulted handles."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self) -> None:
        self.served: dict[str, DaemonContext] = {}
        self.faulted: dict[str, str] = {}

    @property
    def single(self) -> DaemonContext | None:
        return None

    def get(self, handle: str) -> DaemonContext | None:
        return self.served.get(handle)

    def handles(self) -> list[str]:
        return sorted(self.served)

    def fault(self, handle: str) -> str | None:
        return self.faulted.get(handle)

    def faults(self) -> dict[str, str]:
        return dict(self.faulted)


class DirectoryHarness:
    """Companions DIR/<handle>.db served by one ApiServer over a TestRegistry, on a real Unix socket."""

    def __init__(self, root: Path, handles: Sequence[str], *, api: ApiSettings | None = None):
        from daemon.api.server import ApiServer

        self.root = root
        self.sock_dir = Path(tempfile.mkdtemp(prefix="ad-", dir="/tmp"))
        api = api or ApiSettings()
        if not api.socket_path:
            api = dataclasses.replace(api, socket_path=str(self.sock_dir / "a.sock"))
        self.settings = dataclasses.replace(Settings(), api=api)
        self.clock = FakeClock(T0)
        self.embedder = HashEmbedder()
        self.log = RecordingLog()
        self.registry = TestRegistry()
        self.hearts: dict[str, CompanionBeat] = {}
        self.handles = list(handles)
        self.server = ApiServer(self.registry, self.settings, self.log, Path(self.settings.api.socket_path))
        self.session: aiohttp.ClientSession | None = None

    async def serve(self, handle: str) -> DaemonContext:
        """Open DIR/<handle>.db (made first if missing) and serve it, as the host does on a scan."""
        ctx = await companion_context(self.settings, self.root / f"{handle}.db", self.clock, self.log, self.embedder)
        self.registry.faulted.pop(handle, None)
        self.registry.served[handle] = ctx
        return ctx

    async def unserve(self, handle: str, reason: str | None = None) -> None:
        """Stop serving her (closing her store); with a reason she is known but faulted."""
        ctx = self.registry.served.pop(handle, None)
        if ctx is not None:
            await ctx.store.close()
        if reason is not None:
            self.registry.faulted[handle] = reason

    async def start(self) -> DirectoryHarness:
        for handle in self.handles:
            await self.serve(handle)
        await self.server.start()
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.settings.api.socket_path))
        return self

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        await self.server.stop()
        for handle in list(self.registry.served):
            await self.unserve(handle)
        shutil.rmtree(self.sock_dir, ignore_errors=True)

    async def call(self, method: str, path: str, body: Any = None, *, token: str | None = None,
                   raw: bytes | None = None) -> tuple[int, Any]:
        assert self.session is not None
        data = raw if raw is not None else (None if body is None else json.dumps(body, ensure_ascii=False).encode())
        headers = {} if data is None else {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with self.session.request(method, "http://anima" + path, data=data, headers=headers) as resp:
            return resp.status, json.loads(await resp.read())

    async def db(self, handle: str, fn: Any, *args: Any) -> Any:
        return await self.registry.served[handle].store.call(fn, *args)

    async def beat(self, handle: str) -> None:
        """Her heartbeat (daemon/beat.py's steps: offers expired, her tokens re-read), as the host runs it."""
        ctx = self.registry.served[handle]
        heart = self.hearts.get(handle)
        if heart is None or heart.ctx is not ctx:
            api = ApiBeat(self.server)
            heart = self.hearts[handle] = CompanionBeat(ctx, self.log, handle=handle, worker=lambda: None,
                                                        api=lambda: api)
        await heart.beat(self.clock.monotonic())


def turn(turn_id: str, user: str, companion: str, ts: str = "2026-05-28T20:00:00+08:00", **extra: Any) -> dict[str, Any]:
    return {"turn_id": turn_id, "user": user, "companion": companion, "ts": ts, **extra}


class SocketClient:
    """Talk to a real daemon over its Unix socket; keeps every response for privacy checks."""

    def __init__(self, path: str):
        self.path = path
        self.session: aiohttp.ClientSession | None = None
        self.seen: list[tuple[str, int, Any]] = []

    async def __aenter__(self) -> SocketClient:
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.path))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.session is not None
        await self.session.close()

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        assert self.session is not None
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        headers = None if data is None else {"Content-Type": "application/json"}
        async with self.session.request(method, "http://anima" + path, data=data, headers=headers) as resp:
            payload = await resp.json(content_type=None)
            self.seen.append((path, resp.status, payload))
            return resp.status, payload

    def outside_offers(self) -> str:
        """Every response seen, serialised, with the one allowed field (offer.text of /v1/share) blanked."""
        parts = []
        for path, _, body in self.seen:
            if path == "/v1/share" and isinstance(body, dict) and isinstance(body.get("offer"), dict):
                body = {**body, "offer": {**body["offer"], "text": ""}}
            parts.append(json.dumps(body, ensure_ascii=False))
        return "\n".join(parts)


@contextlib.asynccontextmanager
async def running_daemon(db: Path, clock: FakeClock) -> AsyncIterator[tuple[Any, RecordingLog]]:
    """A real Daemon on `db` (hourly heartbeat, no components) with a recording log, started and stopped cleanly.

    The test drives its beats itself (clock.advance + await daemon.heartbeat()); leaving the block stops it.
    """
    from daemon.app import Daemon

    daemon = Daemon(Settings(heartbeat=HeartbeatSettings(interval_s=3600)), db, clock, None, components=[])
    log = daemon.log = RecordingLog()
    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(20):
        while daemon.beat_task is None:
            await asyncio.sleep(0.005)
    try:
        yield daemon, log
    finally:
        daemon.stopping.set()
        await asyncio.wait_for(task, 10)
