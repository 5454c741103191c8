"""The host's beat lane (daemon/beat_lane.py) and its lag summary (daemon/lag_stats.py): one thread for every beat,
a busy or write-locked companion handed back to her own thread, lags exposed in GET /v1/health."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from daemon.api import validation
from daemon.api.routes.companions import host_health
from daemon.clock import FakeClock
from daemon.lag_stats import LagStats, percentile
from engine.store import connect
from tests.api_support import T0
from tests.test_host import advance, beats_of, make_companion, make_host


async def wait_for(predicate: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):  # yields to the loop only: no timing involved
        while not predicate():
            await asyncio.sleep(0)


def test_percentile_is_the_nearest_rank() -> None:
    ordered = [float(i) for i in range(1, 101)]
    assert (percentile(ordered, 50), percentile(ordered, 99), percentile(ordered, 100)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 99) == 7.0


def test_lag_summary_covers_the_window_and_counts_since_start() -> None:
    stats = LagStats(window_s=60.0)
    for i in range(100):
        stats.add(float(i), 100.0, warn_ms=50.0)  # an old burst of late beats, out of the window by t=200
    for i in range(100):
        stats.add(150.0 + i / 10, float(i % 10), warn_ms=50.0)
    summary = stats.summary(200.0, warn_ms=50.0)
    assert summary["beats"] == 100 and summary["max_ms"] == 9.0 and summary["p50_ms"] == 4.0
    assert (summary["beats_total"], summary["late_total"]) == (200, 100)
    empty = LagStats().summary(0.0, warn_ms=50.0)
    assert empty["beats"] == 0 and empty["p99_ms"] is None


async def test_a_group_runs_on_the_lane_and_health_reports_its_lags(tmp_path: Path) -> None:
    for handle in ("a1", "b2", "c3"):
        make_companion(tmp_path, handle)
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=1.0, watch_s=0.0)  # one grid slot: all three in each group
    await host.start()
    try:
        for _ in range(3):
            for runtime in host.runtimes.values():  # her thread idle (the indexer's first scan, a checkpoint done)
                await runtime.ctx.store.call(lambda conn: None)  # type: ignore[union-attr]
            clock.advance(1.0)
            host.launch_due(clock.monotonic())
            await host.beats_done()
        assert [beats_of(tmp_path / f"{h}.db") for h in ("a1", "b2", "c3")] == [3, 3, 3]
        assert host.lane is not None and host.lane.groups == 3 and host.lane.handed_back == 0
        body = await host_health(None, SimpleNamespace(registry=host, settings=host.settings), None)  # type: ignore[arg-type]
        validation.validate_response(validation.operations()[("GET", "/v1/health")], 200, body)
        lag = body["heartbeat_lag"]
        assert (lag["beats"], lag["beats_total"], lag["late_total"]) == (9, 9, 0)
        assert lag["p99_ms"] is not None and lag["p99_ms"] <= lag["max_ms"]
    finally:
        await host.shutdown()


async def test_a_file_another_process_is_writing_gets_its_beat_on_its_own_thread(tmp_path: Path) -> None:
    """The lane never waits on a write lock: her beat waits on her thread, the others' land meanwhile."""
    make_companion(tmp_path, "a1")
    make_companion(tmp_path, "b2")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=1.0, watch_s=0.0)
    await host.start()
    writer = connect(tmp_path / "a1.db")  # an `anima` command writing her file, say
    try:
        writer.execute("BEGIN IMMEDIATE")
        clock.advance(1.0)
        assert host.launch_due(clock.monotonic()) == 2
        a1, b2 = host.runtimes["a1"], host.runtimes["b2"]
        await wait_for(lambda: b2.beats == 1)
        assert host.lane is not None and host.lane.handed_back == 1
        assert a1.beating and a1.beats == 0  # waiting on her own thread, within its busy timeout
        writer.execute("COMMIT")
        await host.beats_done()
        assert a1.beats == 1 and beats_of(tmp_path / "a1.db") == 1
        assert not [kw for _, event, kw in host.log.events if event == "component.failed"]
    finally:
        if writer.in_transaction:
            writer.execute("ROLLBACK")
        writer.close()
        await host.shutdown()


async def test_a_due_checkpoint_runs_on_her_own_thread_and_empties_the_wal(tmp_path: Path) -> None:
    path = make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=1.0, watch_s=0.0)
    await host.start()
    try:
        await advance(host, clock, 40.0)  # every 8th beat is a checkpoint beat
        await host.runtimes["a1"].ctx.store.call(lambda conn: None)  # type: ignore[union-attr]  # after any queued one
        frames = [kw for _, event, kw in host.log.events if event == "db.checkpoint"]
        assert len(frames) >= 4 and all(kw["copied"] == kw["wal_frames"] for kw in frames)
    finally:
        await host.shutdown()
    probe = sqlite3.connect(path)
    try:
        assert probe.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        probe.close()


async def test_closing_a_companion_whose_beat_is_on_the_lane_lands_it_first(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=1.0, watch_s=0.0)
    await host.start()
    try:
        clock.advance(1.0)
        host.launch_due(clock.monotonic())
        await host._close_one("a1", "removed")  # at once: her beat may still be on the lane
        assert beats_of(tmp_path / "a1.db") == 1
        assert not [kw for _, event, kw in host.log.events if event in ("heartbeat.failed", "daemon.stop_unrecorded")]
    finally:
        await host.shutdown()


@pytest.mark.parametrize("on_lane", [True, False])
async def test_a_beat_lands_the_same_on_the_lane_and_on_her_thread(tmp_path: Path, on_lane: bool) -> None:
    make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=1.0, watch_s=0.0)
    await host.start()
    try:
        runtime = host.runtimes["a1"]
        for _ in range(3):
            clock.advance(1.0)
            if on_lane:
                host.launch_due(clock.monotonic())
                await host.beats_done()
            else:
                host.schedule.pop_due(clock.monotonic())
                await runtime.beat(clock.monotonic())
        assert runtime.beats == 3 and beats_of(tmp_path / "a1.db") == 3
    finally:
        await host.shutdown()
