"""GET /metrics: the figures an operator graphs, as Prometheus text (through prometheus-client, Apache-2.0).

Two kinds of figure. Counted as they happen, for the whole process (a label per companion would be
a thousand series per route in directory mode): requests by operation and status (and those whose
response could not be delivered), context-request latency (recall and the memory block), storage
refusals. Read at each scrape, one series per served companion (`companion` = her file's stem, the
handle in directory mode): heartbeat age and lag, pending vectors, jobs by state, whether her store
is faulted, and the replication lag of each file a litestream.yml names (read at most every
REPLICATION_TTL_S: it asks the replica). Nothing here carries text: names of operations, states and
handles, and numbers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from engine.jobs import JobStatus, status_counts
from engine.usecases.state import health_check

if TYPE_CHECKING:
    from daemon.component import DaemonContext
    from daemon.registry import CompanionRegistry

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
COMPANION_TIMEOUT_S = 2.0  # one companion's reads at a scrape; a stuck one is left out, not waited on
REPLICATION_TTL_S = 60.0
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
JOB_STATES = tuple(state.value for state in JobStatus)


class ApiMetrics:
    """The process's counters (one per ApiApp), and the scrape that reads the companions' figures."""

    def __init__(self) -> None:
        self.requests = Counter("anima_http_requests", "API requests answered, by operation and status",
                                ["op", "status"], registry=None)
        self.undelivered = Counter("anima_http_responses_undelivered",
                                   "API responses that could not be written (the client or the gate closed "
                                   "the connection)", ["op"], registry=None)
        self.context_seconds = Histogram("anima_recall_seconds", "Time to answer POST /v1/context (recall and "
                                         "the memory block)", buckets=LATENCY_BUCKETS, registry=None)
        self.storage_refusals = Counter("anima_storage_full_refusals",
                                        "Writes refused because the disk was full", registry=None)
        self._replication: tuple[float, dict[str, float | None]] | None = None

    def request_done(self, op: str | None, status: int, delivered: bool) -> None:
        name = op or "unmatched"
        self.requests.labels(name, str(status)).inc()
        if not delivered:
            self.undelivered.labels(name).inc()

    async def scrape(self, registry: CompanionRegistry, beat_s: float) -> bytes:
        """The whole exposition: the counters above and one read of every served companion (`beat_s`: the
        configured heartbeat, for companions that did not record their own)."""
        served: list[tuple[str, DaemonContext]] = []
        if registry.single is not None:
            served.append((registry.single.db_path.stem, registry.single))
        else:
            for handle in registry.handles():
                ctx = registry.get(handle)
                if ctx is not None:
                    served.append((handle, ctx))
        reads = await asyncio.gather(*(_read_companion(ctx) for _, ctx in served))
        faults = getattr(registry, "faults", None)
        faulted = sorted(faults()) if callable(faults) else []
        replication = await self._replication_lags()
        lag = getattr(registry, "heartbeat_lag", None)
        snapshot = Snapshot(served, reads, faulted, replication, lag() if callable(lag) else None,
                            beat_s)
        out = CollectorRegistry(auto_describe=False)
        for collector in (self.requests, self.undelivered, self.context_seconds, self.storage_refusals, snapshot):
            out.register(collector)
        return generate_latest(out)

    async def _replication_lags(self) -> dict[str, float | None]:
        """{companion: lag_s} of the files the litestream.yml names ($ANIMA_LITESTREAM_CONFIG or the default
        path), cached REPLICATION_TTL_S; {} without replication."""
        from daemon.replication_status import config_path

        path = config_path(None)
        now = time.monotonic()
        if self._replication is not None and now - self._replication[0] < REPLICATION_TTL_S:
            return self._replication[1]
        lags: dict[str, float | None] = {}
        if path.is_file():
            lags = await asyncio.get_running_loop().run_in_executor(None, _replication_rows, path)
        self._replication = (now, lags)
        return lags


def _replication_rows(path: Path) -> dict[str, float | None]:
    from daemon.replication_status import replication_rows

    try:
        return {str(row["companion"]): row.get("lag_s") for row in replication_rows(path)}
    except Exception:  # a broken config is doctor's to report; the scrape goes on without the figure
        return {}


async def _read_companion(ctx: DaemonContext) -> tuple[dict[str, int], int] | None:
    """(jobs by state, pending vectors), or None when her file does not answer in time."""
    indexer = ctx.vector_indexer

    def read(conn: Any) -> tuple[dict[str, int], int]:
        return status_counts(conn), health_check(conn, indexer)[1]

    try:
        async with asyncio.timeout(COMPANION_TIMEOUT_S):
            result: tuple[dict[str, int], int] = await ctx.store.call(read)
            return result
    except Exception:
        return None


class Snapshot(Collector):
    """The per-companion figures read at one scrape."""

    def __init__(self, served: list[tuple[str, DaemonContext]], reads: Iterable[tuple[dict[str, int], int] | None],
                 faulted: list[str], replication: dict[str, float | None], lag: dict[str, Any] | None,
                 interval_s: float):
        self.served = served
        self.reads = list(reads)
        self.faulted = faulted
        self.replication = replication
        self.lag = lag
        self.interval_s = interval_s

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("anima_companion_up", "1 for a companion served, 0 for one whose file could "
                               "not be opened", labels=["companion"])
        age = GaugeMetricFamily("anima_heartbeat_age_seconds", "Seconds since her last heartbeat (monotonic)",
                                labels=["companion"])
        last = GaugeMetricFamily("anima_heartbeat_last_timestamp_seconds", "Wall time of her last heartbeat",
                                 labels=["companion"])
        loop_lag = GaugeMetricFamily("anima_heartbeat_lag_seconds", "How late her last heartbeat started",
                                     labels=["companion"])
        pending = GaugeMetricFamily("anima_vectors_pending", "Memories waiting for a vector", labels=["companion"])
        jobs = GaugeMetricFamily("anima_jobs", "Jobs by state", labels=["companion", "state"])
        fault = GaugeMetricFamily("anima_storage_fault", "1 while her store refuses writes (full disk, damaged "
                                  "file)", labels=["companion"])
        readable = GaugeMetricFamily("anima_companion_readable", "1 when her file answered this scrape in time",
                                     labels=["companion"])
        for (name, ctx), read in zip(self.served, self.reads, strict=True):
            up.add_metric([name], 1)
            age.add_metric([name], max(0.0, ctx.clock.monotonic() - ctx.last_beat_mono))
            last.add_metric([name], ctx.last_beat_at)
            loop_lag.add_metric([name], ctx.loop_lag_ms / 1000.0)
            fault.add_metric([name], 0 if getattr(ctx.store, "fault", None) is None else 1)
            readable.add_metric([name], 0 if read is None else 1)
            if read is not None:
                counts, waiting = read
                pending.add_metric([name], waiting)
                for state in sorted(set(JOB_STATES) | set(counts)):
                    jobs.add_metric([name, state], counts.get(state, 0))
        for name in self.faulted:
            up.add_metric([name], 0)
        yield from (up, age, last, loop_lag, pending, jobs, fault, readable)
        interval = GaugeMetricFamily("anima_heartbeat_interval_seconds", "The configured heartbeat interval")
        interval.add_metric([], self.interval_s)
        yield interval
        if self.lag is not None:
            beats = CounterMetricFamily("anima_heartbeats", "Heartbeats run by this process")
            beats.add_metric([], self.lag.get("beats_total", 0))
            late = CounterMetricFamily("anima_heartbeats_late", "Heartbeats that started later than "
                                       "[heartbeat] lag_warn_ms")
            late.add_metric([], self.lag.get("late_total", 0))
            window = GaugeMetricFamily("anima_heartbeat_start_lag_seconds", "Percentiles of how late beats "
                                       "started over the last window", labels=["quantile"])
            for key, quantile in (("p50_ms", "0.5"), ("p95_ms", "0.95"), ("p99_ms", "0.99"), ("max_ms", "1")):
                if self.lag.get(key) is not None:
                    window.add_metric([quantile], self.lag[key] / 1000.0)
            yield from (beats, late, window)
        if self.replication:
            replication = GaugeMetricFamily("anima_replication_lag_seconds", "How far her replica is behind her "
                                            "file (NaN when it cannot be read)", labels=["companion"])
            for name, lag_s in sorted(self.replication.items()):
                replication.add_metric([name], float("nan") if lag_s is None else lag_s)
            yield replication
