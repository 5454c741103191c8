"""One companion as the API serves her (ApiState) and what the whole application shares (ApiApp), and the request keys.

The routes (daemon/api/routes), the admission check (daemon/api/companions.py) and the app builder
(daemon/api/http.py) all read these; they sit below all three, so no import goes round in a circle
(tests/test_layering.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from daemon.api import privacy
from daemon.api.gate import RateLimitedLog
from daemon.api.metrics import ApiMetrics
from daemon.api.query_vectors import QueryVectors
from daemon.api.tokens import TokenBook
from daemon.component import DaemonContext
from daemon.registry import CompanionRegistry
from engine import model_config
from engine.errors import StoreError


@dataclass
class ApiState:
    """One companion as the API serves her: her context, her untold-text index and persona, the app's embedding pool.

    One per served companion (made on her first request, again when she is served by a new context), so
    the privacy projection of a response uses the untold index of the companion it is about, and no other.
    """

    ctx: DaemonContext
    executor: ThreadPoolExecutor
    handle: str | None = None  # None: single-file mode's companion, on the unscoped paths
    untold: privacy.UntoldIndex = field(default_factory=privacy.UntoldIndex)
    persona_obj: Any = None
    # The next short message's lines before it, embedded after each chat reply (daemon/api/query_vectors.py).
    query_vectors: QueryVectors = field(default_factory=QueryVectors)
    _storage_full_log: RateLimitedLog | None = None

    def storage_full_log(self) -> RateLimitedLog:
        """One `api.storage_full` warning per [api] error_log_interval_s, with a count: a full disk refuses
        every write, and a line per refused request would be the log filling the disk further."""
        if self._storage_full_log is None:
            self._storage_full_log = RateLimitedLog(self.ctx.log, "api.storage_full",
                                                    self.settings.api.error_log_interval_s)
        return self._storage_full_log

    def now(self) -> float:
        return self.ctx.clock.now()

    @property
    def settings(self) -> Any:
        return self.ctx.settings

    def embedder(self) -> Any:
        embedder = self.ctx.embedder
        if embedder is None:
            raise StoreError("no embedder is running (the memory component did not start)")
        return embedder

    async def db(self, request: web.Request, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(conn, *args)` on the DB thread and refresh the untold-text index in the same call.

        The index read right after the handler's own reads is exactly what its response could
        contain, so the privacy projection needs no second trip through the (busy) DB thread.
        """
        cached = self.untold

        def run(conn: Any, *a: Any) -> tuple[Any, privacy.UntoldIndex]:
            result = fn(conn, *a)
            return result, privacy.load_untold(conn, cached)

        result, index = await self.ctx.store.call(run, *args)
        self.untold = index
        request[FRESH_INDEX] = index
        return result

    async def off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run CPU work (embedding) in the pool, off the event loop and off the DB thread."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)


class ApiApp:
    """What the whole application shares: the companions (a registry), settings, the log, one embedding pool,
    the token map, and one ApiState per companion."""

    def __init__(self, registry: CompanionRegistry, settings: Any, log: Any, tcp_token: str | None = None):
        self.registry = registry
        self.settings = settings
        self.log = log
        self.tcp_token = tcp_token
        # One pool for every companion: embedding is CPU work, and the CPU is the host's, not hers.
        self.executor = ThreadPoolExecutor(2, thread_name_prefix="api-embed")
        self.tokens = TokenBook()
        self.metrics = ApiMetrics()  # GET /metrics: requests, latency, refusals counted here
        self._states: dict[str | None, ApiState] = {}
        self.model = model_config.resolve(settings)  # the chat model ([model]); its key stays in memory only
        self._upstream: Any = None
        self._background: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` after the response, holding its task until done (stop cancels what is left)."""
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def cancel_background(self) -> None:
        """Stop the work `spawn` started and wait for it to end: nothing of it outlives the server."""
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def upstream(self) -> Any:
        """The client of the configured chat model (daemon/api/upstream.py), or None when [model] has no base_url."""
        if not self.model.configured:
            return None
        if self._upstream is None:
            from daemon.api.upstream import Upstream

            self._upstream = Upstream(self.model)
        return self._upstream

    def state_of(self, handle: str | None, ctx: DaemonContext) -> ApiState:
        """Her ApiState; a new one (empty caches) when she is served by another context than before."""
        state = self._states.get(handle)
        if state is None or state.ctx is not ctx:
            state = self._states[handle] = ApiState(ctx=ctx, executor=self.executor, handle=handle)
        return state

    def forget(self, handle: str) -> None:
        """Drop the state and token digests of a companion that is no longer served (her caches must not
        outlive her context; her tokens open nothing once she is gone)."""
        state = self._states.pop(handle, None)
        if state is not None:
            state.query_vectors.clear()
        self.tokens.drop(handle)


APP = web.AppKey("anima_api", ApiApp)
# Request key: the companion this request is for (None: the process itself, e.g. GET /v1/companions).
TARGET: Any = web.RequestKey("anima_target", object) if hasattr(web, "RequestKey") else "anima_target"
# Request key: the untold index read with this request's last DB call (RequestKey on aiohttp >= 3.12).
FRESH_INDEX: Any = (web.RequestKey("anima_untold_index", privacy.UntoldIndex) if hasattr(web, "RequestKey")
                    else "anima_untold_index")


# Request key: the caller's own strings, which the privacy scan never counts as a leak (privacy.find_leaks).
SENT: Any = (web.RequestKey("anima_sent_strings", tuple) if hasattr(web, "RequestKey") else "anima_sent_strings")
