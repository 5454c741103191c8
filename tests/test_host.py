"""Many companions in one process (daemon/host.py): scans, runtime add/remove, .stop markers, faults, beats."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from daemon.beat_schedule import BeatSchedule, gap_phase, spread_phases
from daemon.clock import FakeClock
from daemon.host import Host
from engine.companion import create_companion
from engine.settings import DaemonSettings, HeartbeatSettings, Settings
from engine.store import connect, migrate, transaction
from engine.store.core import daemon_state, set_companion_handle
from engine.store.life import get_inner_state_text
from engine.store.lock import is_locked
from tests.api_support import T0, HashEmbedder, RecordingLog

REPO = Path(__file__).resolve().parent.parent


def make_companion(folder: Path, handle: str, name: str = "A", *, now: float = T0, home: Any = None) -> Path:
    """Her file `<handle>.db` in `folder`, created a day before `now`; `home` (engine.home.Home): where she lives."""
    path = folder / f"{handle}.db"
    conn = connect(path)
    try:
        migrate(conn, now)
        create_companion(conn, name=name, birth_local="1998-04-12 09:30", tz="Asia/Shanghai", place=None,
                         sect=2, now=now - 86400, home=home)
        with transaction(conn):
            set_companion_handle(conn, handle)
    finally:
        conn.close()
    return path


def settings(interval_s: float = 10.0, watch_s: float = 5.0) -> Settings:
    """Many-mode settings whose companions beat every `interval_s` (the process's own beat the same)."""
    return dataclasses.replace(Settings(), heartbeat=HeartbeatSettings(interval_s=interval_s),
                               daemon=DaemonSettings(watch_s=watch_s, beat_s=interval_s))


def make_host(folder: Path, clock: FakeClock, embedder: Any = None, **kw: Any) -> Host:
    host = Host(settings(**kw), folder, clock, None, embedder=embedder or HashEmbedder(), api=False)
    host.log = RecordingLog()
    return host


def beats_of(path: Path) -> int:
    conn = connect(path, readonly=True)
    try:
        state = daemon_state(conn)
        return int(state["beats"]) if state else 0
    finally:
        conn.close()


@contextlib.asynccontextmanager
async def served(folder: Path, *handles: str, embedder: Any = None,
                 **kw: Any) -> AsyncIterator[tuple[Host, FakeClock]]:
    """A started host over `folder` with new companions `handles` (settings(**kw)), shut down on the way out."""
    for handle in handles:
        make_companion(folder, handle)
    clock = FakeClock(T0)
    host = make_host(folder, clock, embedder, **kw)
    await host.start()
    try:
        yield host, clock
    finally:
        await host.shutdown()


async def advance(host: Host, clock: FakeClock, seconds: float, step: float = 0.5) -> None:
    """Let `seconds` of (fake) time pass in small steps, running whatever falls due, and wait for the beats."""
    t = 0.0
    while t < seconds:
        clock.advance(step)
        t += step
        await host.tick()
        await host.beats_done()


async def test_scan_serves_every_valid_file_and_ignores_the_rest(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    make_companion(tmp_path, "b-2")
    (tmp_path / "Bad.db").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    host = make_host(tmp_path, FakeClock(T0))
    await host.start()
    try:
        assert host.handles() == ["a1", "b-2"]
        assert host.get("a1") is not None and host.get("zz") is None and host.single is None
        ignored = sorted(kw["file"] for _, event, kw in host.log.events if event == "companion.ignored")
        assert ignored == ["Bad.db", "notes.txt"]
        await host.scan()
        assert [e for _, e, _ in host.log.events].count("companion.ignored") == 2  # logged once each
    finally:
        await host.shutdown()


async def test_a_stop_during_the_start_scan_opens_no_more_files_and_shutdown_closes_every_open_one(
        tmp_path: Path) -> None:
    for i in range(3):
        make_companion(tmp_path, f"c{i}")
    host = make_host(tmp_path, FakeClock(T0))
    await host.start()
    make_companion(tmp_path, "late")
    host.stopping.set()  # SIGTERM while a scan is under way
    changed = await host.scan()
    assert changed["opened"] == [] and not is_locked(tmp_path / "late.db")
    await host.shutdown()
    assert host.handles() == [] and not any(is_locked(tmp_path / f"c{i}.db") for i in range(3))
    for i in range(3):  # each one's stop recorded (a clean stop), not cut short
        conn = connect(tmp_path / f"c{i}.db", readonly=True)
        assert daemon_state(conn)["stopped_at"] is not None
        conn.close()


async def test_new_file_is_served_at_the_next_watch_and_a_removed_one_stopped(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, watch_s=5.0)
    await host.start()
    try:
        make_companion(tmp_path, "b2")
        await advance(host, clock, 4.0)
        assert host.handles() == ["a1"]  # not before the watch comes round
        await advance(host, clock, 1.5)
        assert host.handles() == ["a1", "b2"]
        await advance(host, clock, 25.0)
        assert beats_of(tmp_path / "b2.db") >= 2
        (tmp_path / "a1.db").unlink()
        await advance(host, clock, 5.5)
        assert host.handles() == ["b2"] and host.get("a1") is None
    finally:
        await host.shutdown()


async def test_the_watch_lists_the_directory_only_when_its_mtime_says_it_changed(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import daemon.host as host_module
    listings = []
    real = host_module.list_directory
    monkeypatch.setattr(host_module, "list_directory", lambda folder: listings.append(1) or real(folder))
    make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, watch_s=5.0)
    await host.start()
    try:
        past = time.time() - 3600
        os.utime(tmp_path, (past, past))  # a directory untouched for an hour
        await advance(host, clock, 5.5)
        first = len(listings)
        assert first >= 1  # the first watch lists (nothing known yet) and remembers the stamp
        await advance(host, clock, 20.0)
        assert len(listings) == first  # four watches, no change: one stat each, no listing
        make_companion(tmp_path, "b2")  # a new entry moves the directory's mtime
        await advance(host, clock, 5.5)
        assert host.handles() == ["a1", "b2"] and len(listings) > first
        os.utime(tmp_path, (past, past))
        (tmp_path / "a1.stop").touch()  # a marker is a new entry too
        await advance(host, clock, 5.5)
        assert host.handles() == ["b2"]
    finally:
        await host.shutdown()


async def test_sighup_rescan_serves_a_new_file_when_the_watch_is_off(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, watch_s=0.0)
    await host.start()
    try:
        make_companion(tmp_path, "b2")
        await advance(host, clock, 30.0)
        assert host.handles() == ["a1"]
        await host.reload()  # what SIGHUP runs (no config file: the embedded defaults, a 60 s beat)
        assert host.handles() == ["a1", "b2"]
        await advance(host, clock, 65.0, step=1.0)
        assert beats_of(tmp_path / "b2.db") >= 1
    finally:
        await host.shutdown()


async def test_stop_marker_stops_serving_and_releases_the_lock_and_removing_it_serves_again(tmp_path: Path) -> None:
    path = make_companion(tmp_path, "a1")
    make_companion(tmp_path, "b2")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, watch_s=5.0)
    await host.start()
    try:
        assert is_locked(path)
        (tmp_path / "a1.stop").touch()
        await advance(host, clock, 5.5)
        assert host.handles() == ["b2"]
        assert not is_locked(path)  # an operator may now take its final replica sync, or move it
        conn = connect(path, readonly=True)
        try:
            assert daemon_state(conn)["stopped_at"] is not None  # a clean stop on file
        finally:
            conn.close()
        assert host.fault("a1") is None
        (tmp_path / "a1.stop").unlink()
        await advance(host, clock, 5.5)
        assert host.handles() == ["a1", "b2"] and is_locked(path)
    finally:
        await host.shutdown()
    assert not is_locked(path)


async def test_every_companion_gets_the_same_embedder_object(tmp_path: Path) -> None:
    for handle in ("a1", "b2", "c3"):
        make_companion(tmp_path, handle)
    host = make_host(tmp_path, FakeClock(T0))
    await host.start()
    try:
        contexts = [host.get(h) for h in host.handles()]
        embedders = {id(ctx.embedder) for ctx in contexts if ctx}
        gates = {id(ctx.interactive_gate) for ctx in contexts if ctx}
        queues = {id(ctx.vector_indexer.queue) for ctx in contexts if ctx}
        assert len(contexts) == 3 and len(embedders) == 1 and len(gates) == 1 and len(queues) == 1
        indexers = {id(ctx.vector_indexer) for ctx in contexts if ctx}
        assert len(indexers) == 3  # each her own watermark, one indexing loop and thread between them
    finally:
        await host.shutdown()


async def test_a_corrupt_file_is_faulted_with_its_reason_and_the_others_serve(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    bad = make_companion(tmp_path, "b2")
    data = bytearray(bad.read_bytes())
    data[4096:8192] = b"\xa5" * 4096  # a page of garbage in the b-tree
    bad.write_bytes(bytes(data))
    before = bad.read_bytes()
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock)
    await host.start()
    try:
        assert host.handles() == ["a1"]
        reason = host.fault("b2")
        assert reason and "b2.db" in reason
        await advance(host, clock, 25.0)
        assert beats_of(tmp_path / "a1.db") >= 2
        assert bad.read_bytes() == before  # left exactly as found
    finally:
        await host.shutdown()


async def test_a_file_locked_by_another_process_is_faulted_and_served_at_the_next_scan_once_released(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    held = make_companion(tmp_path, "b2")
    code = ("import sys; from pathlib import Path; from engine.store.lock import DaemonLock\n"
            "lock = DaemonLock(Path(sys.argv[1])); lock.acquire(); print('held', flush=True); sys.stdin.read()")
    holder = subprocess.Popen([sys.executable, "-c", code, str(held)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        clock = FakeClock(T0)
        host = make_host(tmp_path, clock)
        await host.start()
        try:
            assert host.handles() == ["a1"]
            reason = host.fault("b2")
            assert reason and "another anima daemon" in reason and str(holder.pid) in reason
            await host.scan()  # still held: still faulted, the other served
            assert host.handles() == ["a1"] and host.fault("b2") == reason
            holder.communicate("", timeout=10)  # the other daemon stops; the file itself is unchanged
            await host.scan()  # the next watch scan (no SIGHUP) tries a lock fault again
            assert host.handles() == ["a1", "b2"] and host.fault("b2") is None
        finally:
            await host.shutdown()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


async def test_a_newer_schema_file_is_faulted(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    newer = make_companion(tmp_path, "b2")
    conn = connect(newer)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(schema_migrations)")]
        values = {"version": 9999}
        conn.execute(f"INSERT INTO schema_migrations ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                     [values.get(c, 0) for c in columns])
    finally:
        conn.close()
    before = as_found(tmp_path, "b2")
    host = make_host(tmp_path, FakeClock(T0))
    await host.start()
    try:
        assert host.handles() == ["a1"]
        assert "newer than this anima understands" in (host.fault("b2") or "")
        await host.scan(retry_faults=True)
    finally:
        await host.shutdown()
    assert as_found(tmp_path, "b2") == before


def test_phases_spread_evenly_and_a_newcomer_takes_the_widest_gap() -> None:
    assert spread_phases(4, 12.0) == [0.0, 3.0, 6.0, 9.0]
    assert gap_phase([0.0, 3.0, 6.0], 12.0) == 9.0
    assert gap_phase([0.0, 1.0], 12.0) == 7.0  # the middle of the empty seconds 2..11
    assert gap_phase([], 12.0) == 0.0


def test_a_thousand_companions_beat_in_groups_one_a_second_and_newcomers_fill_the_emptiest() -> None:
    phases = spread_phases(1000, 60.0)
    groups = Counter(phases)
    assert sorted(groups) == [float(s) for s in range(60)]  # every second of the minute, on the second
    assert min(groups.values()) == 16 and max(groups.values()) == 17
    assert set(Counter(spread_phases(3, 0.5))) == {0.0}  # an interval under a second: one group
    phases = spread_phases(120, 60.0)
    for _ in range(70):
        phases.append(gap_phase(phases, 60.0))
    sizes = Counter(phases).values()
    assert max(sizes) - min(sizes) == 1 and sum(sizes) == 190  # 190 over 60 seconds: 3 or 4 each, never a pile


def test_the_schedule_beats_each_companion_once_per_interval_on_its_phase() -> None:
    schedule = BeatSchedule(10.0, epoch=100.0)
    for handle, phase in zip("abcde", spread_phases(5, 10.0), strict=True):
        schedule.add(handle, 100.0, phase)
    seen: list[tuple[str, float]] = []
    t = 100.0
    while t < 130.0:
        t += 0.25
        seen += schedule.pop_due(t)
    per = {h: [at for hh, at in seen if hh == h] for h in "abcde"}
    assert all(len(v) == 3 for v in per.values())
    assert all(b - a == pytest.approx(10.0) for v in per.values() for a, b in zip(v, v[1:], strict=False))
    firsts = sorted(v[0] for v in per.values())
    assert [round(b - a, 6) for a, b in zip(firsts, firsts[1:], strict=False)] == [2.0] * 4  # 2 s apart, no burst
    schedule.remove("c")
    assert all(h != "c" for h, _ in schedule.pop_due(200.0))


async def test_beats_of_many_companions_are_spread_over_the_interval(tmp_path: Path) -> None:
    for i in range(8):
        make_companion(tmp_path, f"c{i}")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=8.0, watch_s=0.0)
    await host.start()
    try:
        launched = []
        for _ in range(32):  # 16 s in 0.5 s steps: each companion twice, one or none per step
            clock.advance(0.5)
            launched.append(host.launch_due(clock.monotonic()))
            await host.beats_done()
        assert sum(launched) == 16 and max(launched) == 1
        assert all(beats_of(tmp_path / f"c{i}.db") == 2 for i in range(8))
    finally:
        await host.shutdown()


async def test_a_long_db_call_in_one_companion_does_not_delay_the_beat_of_another(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    make_companion(tmp_path, "b2")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=4.0, watch_s=0.0)
    await host.start()
    release, started = threading.Event(), threading.Event()
    ctx_a, ctx_b = host.get("a1"), host.get("b2")
    assert ctx_a is not None and ctx_b is not None

    def long_call(_conn: Any) -> None:  # a long consolidation or a big forget, say
        started.set()
        release.wait(30)

    slow = asyncio.ensure_future(ctx_a.store.call(long_call))
    try:
        async with asyncio.timeout(10):
            while not started.is_set():  # A's thread is inside the long call
                await asyncio.sleep(0)
        before = beats_of(tmp_path / "b2.db")
        clock.advance(4.0)
        host.launch_due(clock.monotonic())
        b_runtime = host.runtimes["b2"]
        async with asyncio.timeout(10):  # B's beat completes while A's thread is still busy
            while b_runtime.beats == 0:
                await asyncio.sleep(0)  # yield to the loop only: no timing involved
        assert beats_of(tmp_path / "b2.db") == before + 1
        assert not slow.done() and host.runtimes["a1"].beating
    finally:
        release.set()
        await slow
        await host.shutdown()


async def test_a_beat_in_many_mode_records_it_and_steps_her_life(tmp_path: Path) -> None:
    path = make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=5.0, watch_s=0.0)
    await host.start()
    try:
        await advance(host, clock, 11.0)
        conn = connect(path, readonly=True)
        try:
            state = daemon_state(conn)
            assert state["beats"] == 2 and state["last_beat_at"] == pytest.approx(T0 + 10.0)
            activity = conn.execute("SELECT count(*) FROM activity").fetchone()[0]
        finally:
            conn.close()
        assert activity >= 1  # her life was planned and stepped
        assert host.runtimes["a1"].heartbeat_stats()["beats"] == 2
    finally:
        await host.shutdown()


def as_found(folder: Path, handle: str) -> dict[str, bytes]:
    """Her file and its side files, byte for byte (absent and empty alike: SQLite's read-only open of a WAL
    file may make an empty -wal, which holds nothing)."""
    return {suffix: (folder / f"{handle}.db{suffix}").read_bytes() if (folder / f"{handle}.db{suffix}").exists()
            else b"" for suffix in ("", "-wal", "-journal")}


async def test_a_file_with_another_companions_handle_is_faulted_and_left_exactly_as_found(tmp_path: Path) -> None:
    make_companion(tmp_path, "a1")
    shutil.copy(tmp_path / "a1.db", tmp_path / "b2.db")  # a copy renamed: she would answer as someone else
    before = as_found(tmp_path, "b2")
    host = make_host(tmp_path, FakeClock(T0))
    await host.start()
    try:
        assert host.handles() == ["a1"]
        assert "a1" in (host.fault("b2") or "")
        for _ in range(3):  # issue 25: each scan wrote a start and a gap event into the refused file
            await host.scan(retry_faults=True)
        assert host.fault("b2") and as_found(tmp_path, "b2") == before
    finally:
        await host.shutdown()
    assert as_found(tmp_path, "b2") == before


async def test_a_failing_step_of_a_beat_is_rolled_back_alone_and_the_beat_still_lands(tmp_path: Path) -> None:
    path = make_companion(tmp_path, "a1")
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=5.0, watch_s=0.0)
    await host.start()
    try:
        ctx = host.get("a1")
        assert ctx is not None
        # A real failure inside the batch: the offers table is gone, so the offer-expiry step raises.
        await ctx.store.call(lambda conn: conn.execute("ALTER TABLE share_offer RENAME TO share_offer_gone"))
        await advance(host, clock, 5.5)
        failed = [kw["component"] for level, event, kw in host.log.events if event == "component.failed"]
        assert failed == ["share"]
        conn = connect(path, readonly=True)
        try:
            assert daemon_state(conn)["beats"] == 1  # recorded in the same transaction as the failed step
            assert json.loads(get_inner_state_text(conn) or "{}")["last_step_at"] == pytest.approx(T0 + 5.0)  # life stepped
        finally:
            conn.close()
        assert host.runtimes["a1"].beats == 1 and ctx.status_summary
    finally:
        await host.shutdown()


async def test_a_ready_job_is_claimed_at_her_beat_and_run_on_the_shared_worker(tmp_path: Path) -> None:
    from engine import jobs
    from engine.jobs.registry import CONSOLIDATE

    path = make_companion(tmp_path, "a1")
    make_companion(tmp_path, "b2")
    conn = connect(path)
    try:
        job_id = jobs.enqueue(conn, CONSOLIDATE, {"trigger": "test"}, T0)
    finally:
        conn.close()
    clock = FakeClock(T0)
    host = make_host(tmp_path, clock, interval_s=5.0, watch_s=0.0)
    await host.start()
    try:
        await advance(host, clock, 5.5)
        assert host.shared is not None
        running = list(host.shared.worker.running.values())
        claimed = [kw for _, event, kw in host.log.events if event == "job.claimed"]
        assert [(c["job_id"], c["kind"]) for c in claimed] == [(job_id, CONSOLIDATE)]
        await asyncio.gather(*running)
        conn = connect(path, readonly=True)
        try:
            assert jobs.get_job(conn, job_id)["status"] == "done"
        finally:
            conn.close()
        assert any(event == "job.done" for _, event, _ in host.log.events)
    finally:
        await host.shutdown()


async def test_sighup_applies_a_new_interval_spread_over_every_companion_and_defers_the_directory(
        tmp_path: Path) -> None:
    folder = tmp_path / "companions"
    folder.mkdir()
    for i in range(4):
        make_companion(folder, f"c{i}")
    clock = FakeClock(T0)
    host = make_host(folder, clock, interval_s=8.0, watch_s=0.0)
    config = tmp_path / "config.toml"
    config.write_text('[heartbeat]\ninterval_s = 8.0\n[daemon]\nbeat_s = 4.0\nwatch_s = 0.0\ncompanions_dir = "/elsewhere"\n')
    host.config_file = config
    await host.start()
    try:
        await host.reload()
        assert host.settings.daemon.beat_s == 4.0 and host.settings.daemon.companions_dir == ""
        assert all(rt.ctx is not None and rt.ctx.settings.heartbeat.interval_s == 4.0 for rt in host.runtimes.values())
        deferred = [kw["keys"] for _, event, kw in host.log.events if event == "config.deferred"]
        assert deferred == [["daemon.companions_dir"]]
        assert sorted(host.schedule.phase.values()) == [0.0, 1.0, 2.0, 3.0]
        before = {h: rt.beats for h, rt in host.runtimes.items()}
        await advance(host, clock, 8.0)
        assert all(rt.beats - before[h] == 2 for h, rt in host.runtimes.items())  # every 4 s now
    finally:
        await host.shutdown()


async def test_the_cache_budget_is_set_at_start_and_again_on_reload(tmp_path: Path) -> None:
    from engine.store import caches

    if not hasattr(caches, "set_budget"):
        pytest.skip("caches.set_budget lands with issue 14's cache budget (bench/many.py's branch)")
    folder = tmp_path / "companions"
    folder.mkdir()
    make_companion(folder, "a1")
    host = make_host(folder, FakeClock(T0), watch_s=0.0)
    host.settings = dataclasses.replace(host.settings, daemon=DaemonSettings(watch_s=0.0, cache_budget_mb=32,
                                                                               beat_s=host.settings.daemon.beat_s))
    config = tmp_path / "config.toml"
    config.write_text("[daemon]\nwatch_s = 0.0\ncache_budget_mb = 64\n")
    host.config_file = config
    before = caches.budget_bytes()
    try:
        await host.start()
        assert caches.budget_bytes() == 32 * 2**20
        await host.reload()
        assert caches.budget_bytes() == 64 * 2**20
    finally:
        await host.shutdown()
        caches.set_budget(before)
