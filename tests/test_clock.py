"""A steady heart under a stepped wall clock: monotonic scheduling, step detection, honest health and start-up."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from daemon import companion_beat
from daemon.app import Daemon, prepare_database
from daemon.clock import FakeClock, OffsetFileClock, wall_step
from engine.errors import ConfigError
from engine.settings import HeartbeatSettings, Settings
from engine.store import connect
from tests.api_support import T0, ApiHarness, RecordingLog

DAY = 86400.0


def _settings(interval_s: float) -> Settings:
    return Settings(heartbeat=HeartbeatSettings(interval_s=interval_s))


def _events(db: Path, kind: str) -> list[dict[str, Any]]:
    conn = connect(db)
    try:
        return [json.loads(r[0]) for r in conn.execute("SELECT detail_json FROM event_log WHERE kind = ?", (kind,))]
    finally:
        conn.close()


def test_wall_step_is_what_the_wall_moved_beyond_real_time() -> None:
    assert wall_step(T0, 100.0, T0 + 15, 115.0) is None  # kept pace
    assert wall_step(T0, 100.0, T0 + 15.5, 115.0) is None  # loop lag is not a step
    assert wall_step(T0, 100.0, T0 - 105, 115.0) == pytest.approx(-120.0)
    assert wall_step(T0, 100.0, T0 + DAY + 15, 115.0) == pytest.approx(DAY)


def test_fake_clock_step_moves_only_the_wall() -> None:
    clock = FakeClock(T0, mono_start=50.0)
    clock.advance(10)
    clock.step(-DAY)
    assert clock.now() == T0 + 10 - DAY
    assert clock.monotonic() == 60.0


async def _started(daemon: Daemon) -> asyncio.Task[int]:
    task = asyncio.create_task(daemon.run())
    for _ in range(2000):
        if daemon.beat_task is not None or task.done():
            break
        await asyncio.sleep(0.005)
    assert not task.done(), task.result()
    return task


async def test_a_stepped_wall_clock_is_logged_and_her_beat_covers_real_time_only(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    clock = FakeClock(T0)
    daemon = Daemon(_settings(3600), db, clock, None, components=[])  # the loop never fires on its own here
    log = daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        clock.advance(15)
        await daemon.heartbeat()
        assert log.named("clock.stepped") == []
        clock.advance(15)
        clock.step(-120)
        await daemon.heartbeat()
        clock.advance(15)
        clock.step(DAY)
        await daemon.heartbeat()
        assert [e["step_s"] for e in log.named("clock.stepped")] == [-120.0, DAY]
        assert all(e["elapsed_s"] == 15.0 for e in log.named("clock.stepped"))
        assert [level for level, name, _ in log.events if name == "clock.stepped"] == ["warning", "warning"]
        assert daemon.beats == 3 and daemon.clock_steps == 2
        assert daemon.ctx is not None and daemon.ctx.last_beat_mono == clock.monotonic()
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0
    assert [e["step_s"] for e in _events(db, "clock_stepped")] == [-120.0, DAY]


@pytest.mark.parametrize("step_s", [-120.0, -DAY, DAY])
async def test_the_heartbeat_keeps_coming_after_a_wall_clock_step(tmp_path: Path, step_s: float) -> None:
    """Real time, real monotonic clock, a wall clock stepped through the test hook: beats do not pause."""
    offset = tmp_path / "offset"
    offset.write_text("0")
    daemon = Daemon(_settings(0.05), tmp_path / "her.db", OffsetFileClock(offset), None, components=[])
    log = daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        await _wait(lambda: daemon.beats >= 2)
        offset.write_text(str(step_s))
        before = daemon.beats
        # Under apscheduler a -120 s step paused beats for 120 s and -1 day for a day; 5 beats of
        # 0.05 s must arrive well inside the 20 s allowed here.
        await _wait(lambda: daemon.beats >= before + 5)
        steps = log.named("clock.stepped")
        assert len(steps) == 1 and steps[0]["step_s"] == pytest.approx(step_s, abs=1.0)
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0


async def _wait(condition: Any, timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_health_ages_the_last_beat_on_the_monotonic_clock() -> None:
    harness = await ApiHarness().start()
    try:
        assert harness.ctx is not None
        harness.ctx.last_beat_mono = harness.clock.monotonic()
        harness.clock.advance(1)
        status, health = await harness.call("GET", "/v1/health")
        assert status == 200 and health["alive"] is True and health["last_beat_age_s"] == 1.0
        # The wall clock is set back a day and no beat comes for 10 minutes: the heart is stuck,
        # and health must say so (it used to report age 0.0, alive).
        harness.clock.step(-DAY)
        harness.clock.mono += 600
        status, health = await harness.call("GET", "/v1/health")
        assert status == 200 and health["last_beat_age_s"] == 601.0 and health["alive"] is False
    finally:
        await harness.stop()


def test_start_after_a_backward_step_logs_clock_backwards_and_records_it(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    log = RecordingLog()
    prepare_database(db, Settings(), T0, log)
    conn = connect(db)
    conn.execute("UPDATE daemon_state SET stopped_at = ?", (T0 + 60,))  # a clean stop at T0 + 60
    conn.execute("UPDATE daemon_state SET last_beat_at = ?", (T0 + 60,))
    conn.close()
    prepare_database(db, Settings(), T0 + 60 - DAY, log)
    assert log.named("clock.backwards") == [{"seconds": DAY, "at": "start"}]
    assert [level for level, name, _ in log.events if name == "clock.backwards"] == ["warning"]
    assert _events(db, "clock_backwards") == [{"seconds": DAY, "at": "start"}]
    gap = _events(db, "gap")[-1]
    assert gap["seconds"] == 0.0 and gap["backwards_s"] == DAY and gap["clean_stop"] is True


def test_a_crash_restart_gap_is_a_warning_and_a_clean_one_info(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    log = RecordingLog()
    prepare_database(db, Settings(), T0, log)
    prepare_database(db, Settings(), T0 + 30, log)  # no stop recorded in between: it was killed
    conn = connect(db)
    conn.execute("UPDATE daemon_state SET stopped_at = ?", (T0 + 40,))
    conn.close()
    prepare_database(db, Settings(), T0 + 50, log)
    gaps = [(level, kw["clean_stop"]) for level, name, kw in log.events if name == "daemon.gap"]
    assert gaps == [("warning", False), ("info", True)]


async def test_a_watchdog_shorter_than_two_beats_is_refused_before_anything_is_touched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "60000000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    db = tmp_path / "her.db"
    with pytest.raises(ConfigError, match=r"interval_s = 120 is too long for the systemd watchdog of 60 s"):
        await Daemon(_settings(120), db, FakeClock(T0), None, components=[]).run()
    assert not db.exists()
    # 30 s beats fit twice into 60 s: accepted (started and stopped at once).
    daemon = Daemon(_settings(30), db, FakeClock(T0), None, components=[])
    task = await _started(daemon)
    daemon.stopping.set()
    assert await asyncio.wait_for(task, 10) == 0


async def test_sighup_shortening_the_interval_takes_effect_without_waiting_out_the_old_one(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[heartbeat]\ninterval_s = 3600\n")
    offset = tmp_path / "offset"
    daemon = Daemon(_settings(3600), tmp_path / "her.db", OffsetFileClock(offset), config, components=[])
    log = daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        config.write_text("[heartbeat]\ninterval_s = 1\n[memory]\nembedding_threads = 2\n")
        await daemon.reload()
        await _wait(lambda: daemon.beats >= 1, timeout=10)  # not after the hour the old interval had left
        reloaded = log.named("config.reloaded")[0]
        assert reloaded["applied"] == ["heartbeat.interval_s"] and reloaded["heartbeat_s"] == 1
        assert log.named("config.deferred") == [{"keys": ["memory.embedding_threads"]}]
        assert daemon.settings.memory.embedding_threads == Settings().memory.embedding_threads
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0


async def test_a_failing_beat_keeps_the_loop_and_the_watchdog_but_health_ages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    notify_path = tmp_path / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify_path))
    listener.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(notify_path))
    daemon = Daemon(_settings(0.05), tmp_path / "her.db", OffsetFileClock(tmp_path / "offset"), None, components=[])
    log = daemon.log = RecordingLog()
    task = await _started(daemon)
    try:
        await _wait(lambda: daemon.beats >= 1)
        assert daemon.ctx is not None

        def broken(*_: Any) -> None:
            raise OSError("database or disk is full")

        monkeypatch.setattr(companion_beat, "beat_on", broken)  # her beat's DB work fails from now on
        await _wait(lambda: len(log.named("heartbeat.failed")) >= 3)
        messages = []
        while True:
            try:
                messages.append(listener.recv(4096).decode())
            except BlockingIOError:
                break
        assert any("STATUS=beat failed: OSError" in m and "WATCHDOG=1" in m for m in messages)
        assert daemon.ctx.clock.monotonic() - daemon.ctx.last_beat_mono >= 0.1  # health sees the heart stall
    finally:
        daemon.stopping.set()
        assert await asyncio.wait_for(task, 10) == 0
        listener.close()


def test_a_supervisor_that_does_not_read_never_blocks_the_notifier(tmp_path: Path) -> None:
    """systemd reads at once, a test's listener may not: the 11th unread datagram used to block the loop."""
    import socket
    import threading

    from daemon.sdnotify import Notifier

    path = tmp_path / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(path))
    notifier = Notifier(str(path))
    sender = threading.Thread(target=lambda: [notifier.notify("WATCHDOG=1") for _ in range(100)], daemon=True)
    sender.start()
    sender.join(10)
    try:
        assert not sender.is_alive()
        assert listener.recv(64) == b"WATCHDOG=1"  # what fitted in the queue was delivered
    finally:
        notifier.close()
        listener.close()
