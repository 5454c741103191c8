"""A companion whose disk is full: her beats go on unrecorded (her health says why), the others' are recorded.

Her file lives on a small tmpfs mounted for the test (root only; skipped with the reason otherwise),
linked into the companions directory; SQLite and the lock follow the link to the real file, so her WAL
and lock are on the full disk and the other companion's are not.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.clock import FakeClock
from engine.errors import StorageFullError
from engine.store import connect
from engine.store.core import daemon_state, log_event
from tests.api_support import T0
from tests.test_host import advance, make_companion, make_host

pytestmark = pytest.mark.e2e


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6291456,mode=0755", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({made.stderr.strip() or 'not root'}); disk full needs one")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> Path:
    path = folder / "filler"
    with open(path, "ab", buffering=0) as handle:
        for block in (65536, 4096, 512):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * block)
    return path


def beats_on_file(path: Path) -> int:
    conn = connect(path, readonly=True)
    try:
        return int(daemon_state(conn)["beats"])
    finally:
        conn.close()


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
        filler = fill(small_disk)
        assert a1.ctx is not None
        with contextlib.suppress(StorageFullError):
            await a1.ctx.store.call(write_until_full)
        before_b2 = beats_on_file(folder / "b2.db")
        await advance(host, clock, 10.0)
        assert a1.beats == 3 and b2.beats == 3  # her heart goes on, and so does everyone else's
        assert beats_on_file(folder / "b2.db") == before_b2 + 2
        assert a1.ctx.store.fault and "full" in a1.ctx.store.fault.lower()
        assert any(event == "db.beat_unrecorded" for _, event, _ in host.log.events)
        assert not any(event == "heartbeat.failed" for _, event, _ in host.log.events)
        filler.unlink()
        await advance(host, clock, 5.0)
        assert a1.ctx.store.fault is None  # the first beat that lands clears it
        assert beats_on_file(folder / "a1.db") >= 2
    finally:
        await host.shutdown()
