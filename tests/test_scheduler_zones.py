"""One calendar, companions in different zones (issue 24 item 7): each consolidates at 03:00 of her own clock."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from daemon.clock import FakeClock
from daemon.db import AsyncStore
from daemon.scheduler import Calendar
from engine.companion import create_companion
from engine.consolidate.run import JOB_KIND as CONSOLIDATE
from engine.home import choose_home, settings_for
from engine.memory.ingest import TurnInput, record_turn
from engine.settings import ConsolidationSettings, LifeSettings, MaintenanceSettings, Settings
from engine.store import connect, migrate
from tests.api_support import RecordingLog
from tests.memory_helpers import embedder

HOST = Settings(life=LifeSettings(tz="Asia/Shanghai"), consolidation=ConsolidationSettings(cron_hour=3),
                maintenance=MaintenanceSettings(snapshot_cron="", integrity_cron="", retention_cron="",
                                                replica_verify_cron=""))
START = datetime(2026, 6, 10, 0, 0, tzinfo=UTC).timestamp()  # 08:00 in Shanghai, 20:00 the day before in New York
STEP_S = 900.0


def _companion(path: Path, city: str) -> Settings:
    """Her file (a backlog of one episode, so a cron firing queues a pass) and the settings she lives by."""
    hers = settings_for(HOST, choose_home(HOST, city_name=city))
    conn = connect(path)
    try:
        migrate(conn, now=START)
        create_companion(conn, name=city, birth_local="1998-03-04 05:06", tz="Asia/Shanghai", place=None, sect=2,
                         now=START, home=choose_home(HOST, city_name=city))
        record_turn(conn, embedder(), TurnInput("t1", "今天好累", None, "2026-06-10T08:00:00+08:00"), START)
    finally:
        conn.close()
    return hers


def _consolidations(path: Path) -> list[float]:
    conn = connect(path)
    try:
        return [float(r[0]) for r in conn.execute("SELECT created_at FROM job WHERE kind = ? ORDER BY id",
                                                  (CONSOLIDATE,))]
    finally:
        conn.close()


async def test_companions_in_shanghai_and_new_york_each_consolidate_at_their_own_0300(tmp_path: Path) -> None:
    shanghai = _companion(tmp_path / "sh.db", "上海")
    new_york = _companion(tmp_path / "ny.db", "纽约")
    assert (shanghai.life.tz, new_york.life.tz) == ("Asia/Shanghai", "America/New_York")
    sh_store = await AsyncStore(tmp_path / "sh.db").open()
    ny_store = await AsyncStore(tmp_path / "ny.db").open()
    clock = FakeClock(START)
    log = RecordingLog()
    calendar = Calendar(HOST, clock, lambda: [("sh", sh_store, shanghai), ("ny", ny_store, new_york)], log)
    calendar.start()
    try:
        assert calendar.zones == {"Asia/Shanghai", "America/New_York"}
        for _ in range(int(24 * 3600 / STEP_S)):  # a day, in 15-minute beats
            clock.advance(STEP_S)
            calendar.nudge()
            await calendar.settled()
        assert calendar.fired_in[(CONSOLIDATE, "Asia/Shanghai")] == 1
        assert calendar.fired_in[(CONSOLIDATE, "America/New_York")] == 1
    finally:
        await calendar.stop()
        await sh_store.close()
        await ny_store.close()
    (sh_at,), (ny_at,) = _consolidations(tmp_path / "sh.db"), _consolidations(tmp_path / "ny.db")
    sh_local = datetime.fromtimestamp(sh_at, ZoneInfo("Asia/Shanghai"))
    ny_local = datetime.fromtimestamp(ny_at, ZoneInfo("America/New_York"))
    assert (sh_local.hour, sh_local.minute) == (3, 0) and (ny_local.hour, ny_local.minute) == (3, 0)
    assert sh_at - ny_at == 12 * 3600  # 07:00 UTC is 03:00 in New York (EDT); 19:00 UTC is 03:00 in Shanghai
    fired = [(e["tz"], e["queued"]) for e in log.named("calendar.fired")]
    assert fired == [("America/New_York", 1), ("Asia/Shanghai", 1)]


async def test_a_zone_first_seen_at_a_firing_gets_its_own_jobs(tmp_path: Path) -> None:
    new_york = _companion(tmp_path / "ny.db", "纽约")
    store = await AsyncStore(tmp_path / "ny.db").open()
    clock = FakeClock(START)
    opened: list[tuple[str, AsyncStore, Settings]] = []
    calendar = Calendar(HOST, clock, lambda: list(opened), RecordingLog())
    calendar.start()
    try:
        assert calendar.next_fire(CONSOLIDATE, "America/New_York") is None
        opened.append(("ny", store, new_york))   # she opens after the calendar started
        calendar.watch_zone("America/New_York")
        nxt = calendar.next_fire(CONSOLIDATE, "America/New_York")
        assert nxt is not None and nxt.astimezone(ZoneInfo("America/New_York")).hour == 3
        assert calendar.next_fire(CONSOLIDATE).astimezone(ZoneInfo("Asia/Shanghai")).hour == 3  # type: ignore[union-attr]
    finally:
        await calendar.stop()
        await store.close()


async def test_a_directory_host_serves_each_companion_in_her_own_zone(tmp_path: Path) -> None:
    from zoneinfo import ZoneInfo as Zone

    from tests.test_host import advance, make_companion, make_host

    for handle, city in (("sh", "上海"), ("ny", "纽约")):
        make_companion(tmp_path, handle, city, now=START, home=choose_home(HOST, city_name=city, role_name="护士"))
    clock = FakeClock(START)
    host = make_host(tmp_path, clock, interval_s=5.0, watch_s=0.0)
    await host.start()
    try:
        await advance(host, clock, 6.0)
        served = {h: rt.ctx.settings.life for h, rt in host.runtimes.items() if rt.ctx is not None}
        assert {h: (life.city, life.tz, life.role) for h, life in served.items()} == {
            "sh": ("上海", "Asia/Shanghai", "nurse"), "ny": ("纽约", "America/New_York", "nurse")}
        calendar = host.calendar
        assert calendar is not None and {"Asia/Shanghai", "America/New_York"} <= calendar.zones
        for tz in ("Asia/Shanghai", "America/New_York"):
            nxt = calendar.next_fire(CONSOLIDATE, tz)
            assert nxt is not None and nxt.astimezone(Zone(tz)).hour == 3
        await host.reload()   # what SIGHUP runs: new host settings, each companion still in her own zone
        ny = host.runtimes["ny"].ctx
        assert ny is not None and (ny.settings.life.city, ny.settings.life.tz) == ("纽约", "America/New_York")
        nxt = host.calendar.next_fire(CONSOLIDATE, "America/New_York") if host.calendar else None
        assert nxt is not None and nxt.astimezone(Zone("America/New_York")).hour == 3
    finally:
        await host.shutdown()
