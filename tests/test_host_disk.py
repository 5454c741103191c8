"""A companion whose disk is full: her beats go on unrecorded (her health says why), the others' are recorded.

Her file lives on a small tmpfs mounted for the test (root only; skipped with the reason otherwise),
linked into the companions directory; SQLite and the lock follow the link to the real file, so her WAL
and lock are on the full disk and the other companion's are not.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from daemon.clock import FakeClock
from engine.errors import StorageFullError
from engine.store.core import log_event
from tests.api_support import T0
from tests.conftest import fill_disk
from tests.test_host import advance, beats_of, make_companion, make_host

pytestmark = pytest.mark.e2e


def write_until_full(conn: object) -> int:
    written = 0
    with contextlib.suppress(Exception):
        while True:
            log_event(conn, T0, "filler", pad="x" * 65536)
            written += 1
    return written


async def test_a_full_disk_stops_her_records_only_and_the_others_beat_on(tmp_path: Path, small_disk: Path) -> None:
    folder = tmp_path / "companions"
    folder.mkdir()
    real = make_companion(small_disk, "a1")
    (folder / "a1.db").symlink_to(real)
    make_companion(folder, "b2")
    clock = FakeClock(T0)
    host = make_host(folder, clock, interval_s=5.0, watch_s=0.0)
    await host.start()
    try:
        await advance(host, clock, 5.5)
        a1, b2 = host.runtimes["a1"], host.runtimes["b2"]
        filler = fill_disk(small_disk)
        assert a1.ctx is not None
        with contextlib.suppress(StorageFullError):
            await a1.ctx.store.call(write_until_full)
        before_b2 = beats_of(folder / "b2.db")
        await advance(host, clock, 10.0)
        assert a1.beats == 3 and b2.beats == 3  # her heart goes on, and so does everyone else's
        assert beats_of(folder / "b2.db") == before_b2 + 2
        assert a1.ctx.store.fault and "full" in a1.ctx.store.fault.lower()
        assert any(event == "db.beat_unrecorded" for _, event, _ in host.log.events)
        assert not any(event == "heartbeat.failed" for _, event, _ in host.log.events)
        filler.unlink()
        await advance(host, clock, 5.0)
        assert a1.ctx.store.fault is None  # the first beat that lands clears it
        assert beats_of(folder / "a1.db") >= 2
    finally:
        await host.shutdown()
