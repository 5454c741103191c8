"""The host's beat lane (daemon/beat_lane.py) and its lag summary (daemon/lag_stats.py): one thread for every beat,
a busy or write-locked companion handed back to her own thread, lags exposed in GET /v1/health; quiet beats
(nothing written since the last) skip the re-reads and still see the next write, wherever it came from."""

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
from daemon.host import Host
from daemon.lag_stats import LagStats, percentile
from engine.store import connect
from tests.test_host import advance, beats_of, served

ONE_SLOT = {"interval_s": 1.0, "watch_s": 0.0}  # a 1 s beat: one grid slot, so every companion is in each group


async def wait_for(predicate: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):  # yields to the loop only: no timing involved
        while not predicate():
            await asyncio.sleep(0)


async def idle_threads(host: Host) -> None:
    """Every companion's own thread idle (the indexer's first scan, a checkpoint done): her next beat runs on the lane."""
    for runtime in host.runtimes.values():
        await runtime.ctx.store.call(lambda conn: None)  # type: ignore[union-attr]


async def one_beat(host: Host, clock: FakeClock) -> None:
    """One second on: the group due then goes to the lane, and lands."""
    clock.advance(1.0)
    host.launch_due(clock.monotonic())
    await host.beats_done()


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
    async with served(tmp_path, "a1", "b2", "c3", **ONE_SLOT) as (host, clock):
        for _ in range(3):
            await idle_threads(host)
            await one_beat(host, clock)
        assert [beats_of(tmp_path / f"{h}.db") for h in ("a1", "b2", "c3")] == [3, 3, 3]
        # Three groups of beats, none handed back; a checkpoint a beat left due is a group of its own after it.
        assert host.lane is not None and host.lane.groups >= 3 and host.lane.handed_back == 0
        body = await host_health(None, SimpleNamespace(registry=host, settings=host.settings), None)  # type: ignore[arg-type]
        validation.validate_response(validation.operations()[("GET", "/v1/health")], 200, body)
        lag = body["heartbeat_lag"]
        assert (lag["beats"], lag["beats_total"], lag["late_total"]) == (9, 9, 0)
        assert lag["p99_ms"] is not None and lag["p99_ms"] <= lag["max_ms"]


async def test_a_file_another_process_is_writing_gets_its_beat_on_its_own_thread(tmp_path: Path) -> None:
    """The lane never waits on a write lock: her beat waits on her thread, the others' land meanwhile."""
    async with served(tmp_path, "a1", "b2", **ONE_SLOT) as (host, clock):
        writer = connect(tmp_path / "a1.db")  # an `anima` command writing her file, say
        try:
            await idle_threads(host)
            writer.execute("BEGIN IMMEDIATE")
            clock.advance(1.0)
            assert host.launch_due(clock.monotonic()) == 2
            a1, b2 = host.runtimes["a1"], host.runtimes["b2"]
            await wait_for(lambda: b2.beats == 1)
            assert host.lane is not None and host.lane.handed_back >= 1
            assert a1.beating and a1.beats == 0  # waiting on her own thread, within its busy timeout
            writer.execute("COMMIT")
            await host.beats_done()
            assert a1.beats == 1 and beats_of(tmp_path / "a1.db") == 1
            assert not [kw for _, event, kw in host.log.events if event == "component.failed"]
        finally:
            if writer.in_transaction:
                writer.execute("ROLLBACK")
            writer.close()


async def test_a_due_checkpoint_runs_on_the_lane_after_its_group_and_empties_the_wal(tmp_path: Path) -> None:
    async with served(tmp_path, "a1", **ONE_SLOT) as (host, clock):
        await advance(host, clock, 40.0)  # every 8th beat is a checkpoint beat
        await idle_threads(host)  # after any queued checkpoint
        frames = [kw for _, event, kw in host.log.events if event == "db.checkpoint"]
        assert len(frames) >= 4 and all(kw["copied"] == kw["wal_frames"] for kw in frames)
    probe = sqlite3.connect(tmp_path / "a1.db")
    try:
        assert probe.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        probe.close()


async def test_closing_a_companion_whose_beat_is_on_the_lane_lands_it_first(tmp_path: Path) -> None:
    async with served(tmp_path, "a1", **ONE_SLOT) as (host, clock):
        clock.advance(1.0)
        host.launch_due(clock.monotonic())
        await host._close_one("a1", "removed")  # at once: her beat may still be on the lane
        assert beats_of(tmp_path / "a1.db") == 1
        assert not [kw for _, event, kw in host.log.events if event in ("heartbeat.failed", "daemon.stop_unrecorded")]


@pytest.mark.parametrize("on_lane", [True, False])
async def test_a_beat_lands_the_same_on_the_lane_and_on_her_thread(tmp_path: Path, on_lane: bool) -> None:
    async with served(tmp_path, "a1", **ONE_SLOT) as (host, clock):
        runtime = host.runtimes["a1"]
        for _ in range(3):
            if on_lane:
                await one_beat(host, clock)
            else:
                clock.advance(1.0)
                host.schedule.pop_due(clock.monotonic())
                await runtime.beat(clock.monotonic())
        assert runtime.beats == 3 and beats_of(tmp_path / "a1.db") == 3


async def _trace_beats(host: Host, clock: FakeClock, handle: str, beats: int) -> list[list[str]]:
    """Each of her next `beats` beats' statements (her connection's trace), one list a beat."""
    store = host.runtimes[handle].ctx.store  # type: ignore[union-attr]
    seen: list[list[str]] = []
    await store.call(lambda conn: conn.set_trace_callback(lambda sql: seen[-1].append(sql)))
    for _ in range(beats):
        seen.append([])
        await idle_threads(host)
        await one_beat(host, clock)
    await store.call(lambda conn: conn.set_trace_callback(None))
    return seen


async def test_a_quiet_beat_skips_the_reads_only_a_write_can_change(tmp_path: Path) -> None:
    async with served(tmp_path, "a1", **ONE_SLOT) as (host, clock):
        await advance(host, clock, 2.0)
        quiet = await _trace_beats(host, clock, "a1", 2)
        assert all(not any("life_control" in sql for sql in beat) for beat in quiet)
        assert all(any("mood_state" in sql for sql in beat) for beat in quiet)  # her life still steps every beat
        assert beats_of(tmp_path / "a1.db") == 4


@pytest.mark.parametrize("writer", ["another process", "her own connection"])
async def test_after_quiet_beats_a_switch_written_anywhere_is_obeyed_at_the_next_beat(tmp_path: Path, writer: str) -> None:
    from engine.store.core import set_control

    async with served(tmp_path, "a1", **ONE_SLOT) as (host, clock):
        await advance(host, clock, 3.0)
        ctx = host.runtimes["a1"].ctx
        assert ctx is not None and ctx.switches.life is True
        if writer == "another process":  # `anima control life off` on the live file
            conn = connect(tmp_path / "a1.db")
            try:
                set_control(conn, "life", False, clock.now())
            finally:
                conn.close()
        else:  # a write through her own connection (an API call, say): data_version does not see it
            await ctx.store.call(set_control, "life", False, clock.now(), "api")
        await advance(host, clock, 1.0)
        assert ctx.switches.life is False
        logged = [kw for _, event, kw in host.log.events if event == "control.changed"]
        assert len(logged) == (1 if writer == "another process" else 0)  # others' writes logged once; the API's not


async def test_an_open_offer_expires_at_the_first_quiet_beat_past_its_time(tmp_path: Path) -> None:
    from engine.store.life import add_life_event
    from engine.store.share import get_offer, insert_offer

    async with served(tmp_path, "a1", **ONE_SLOT) as (host, clock):
        await advance(host, clock, 2.0)
        ctx = host.runtimes["a1"].ctx
        assert ctx is not None

        def offer(conn: Any) -> str:  # the sharing channel's offer, made on her connection (the API's write)
            with conn:
                event = add_life_event(conn, "下午去看了一场雨", clock.now() - 60)
                return insert_offer(conn, event, "t1", clock.now(), 4.5)

        share_id = await ctx.store.call(offer)
        await advance(host, clock, 4.0)  # the first beat re-reads (a write); the next ones are quiet
        assert (await ctx.store.call(get_offer, share_id))["status"] == "offered"
        await advance(host, clock, 1.0)  # past its expiry: this quiet beat expires it
        assert (await ctx.store.call(get_offer, share_id))["status"] == "expired"
        assert [kw["count"] for _, event, kw in host.log.events if event == "share.expired"] == [1]
