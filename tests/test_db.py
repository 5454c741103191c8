"""AsyncStore (daemon/db.py) on aiosqlite: a connection's calls in order on one thread at a time, a slow
connection holding only its own thread, her thread running only while she has work, and a host's idle
companions (beats, checkpoints on the beat lane) starting none.

A thread per connection for good cost a thousand-companion host 45 KiB of RSS each; these tests pin
what the aiosqlite design keeps of it (order, isolation) and what it must not (a thread per idle
connection). They also pin the aiosqlite internals daemon/db.py uses (its queue, thread, connection).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from daemon import db
from daemon.db import THREADS, AsyncStore


async def open_stores(tmp_path: Path, count: int) -> list[AsyncStore]:
    return [await AsyncStore(tmp_path / f"c{i}.db").open() for i in range(count)]


async def until(condition: Any, bound_s: float = 30.0) -> bool:
    """Wait for `condition()` (a bound for a slow machine, not a timing assertion)."""
    deadline = time.monotonic() + bound_s
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return bool(condition())


@pytest.fixture
def quick_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "IDLE_S", 0.05)


async def test_calls_on_one_connection_run_in_order_and_never_at_once(tmp_path: Path) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    order: list[int] = []
    inside = 0
    most_inside = 0

    def step(conn: Any, i: int) -> int:
        nonlocal inside, most_inside
        inside += 1
        most_inside = max(most_inside, inside)
        conn.execute("SELECT 1").fetchone()
        order.append(i)
        inside -= 1
        return i

    others = await open_stores(tmp_path, 4)
    # Beside her calls: the beat lane's use of her connection from another thread, and calls of others.
    lane_uses = asyncio.gather(*(asyncio.to_thread(store.run_if_free, step, -1) for _ in range(20)))
    results = await asyncio.gather(*(store.call(step, i) for i in range(200)),
                                   *(other.call(lambda conn: conn.execute("SELECT 1").fetchone())
                                     for other in others for _ in range(50)))
    await lane_uses
    assert results[:200] == list(range(200))
    assert [i for i in order if i >= 0] == list(range(200))
    assert most_inside == 1
    for s in [store, *others]:
        await s.close()


async def test_a_slow_call_holds_only_its_own_connection(tmp_path: Path) -> None:
    slow, quick = await open_stores(tmp_path, 2)
    release = threading.Event()
    stuck = asyncio.ensure_future(slow.call(lambda conn: release.wait(30)))
    queued_behind = asyncio.ensure_future(slow.call(lambda conn: "after the slow one"))
    try:
        # While the slow call holds its thread, another connection's calls go through, and the
        # slow connection's next call waits its turn behind it.
        for _ in range(20):
            assert await quick.call(lambda conn: conn.execute("SELECT 2").fetchone()[0]) == 2
        assert not stuck.done() and not queued_behind.done()
    finally:
        release.set()
    assert await stuck is True
    assert await queued_behind == "after the slow one"
    await slow.close()
    await quick.close()


async def test_a_failing_call_reaches_its_caller_and_the_next_call_runs(tmp_path: Path) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()

    def broken(conn: Any) -> None:
        conn.execute("SELECT * FROM no_such_table")

    with pytest.raises(Exception, match="no_such_table"):
        await store.call(broken)
    assert await store.call(lambda conn: conn.execute("SELECT 3").fetchone()[0]) == 3
    await store.close()


async def test_her_thread_runs_while_she_has_work_and_stops_after_idle(tmp_path: Path, quick_rest: None) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    threads_before = threading.active_count()
    await store.call(lambda conn: conn.execute("CREATE TABLE t (x)"))
    assert store.working
    assert await until(lambda: not store.working)
    assert await until(lambda: threading.active_count() < threads_before)  # the thread itself ended
    # Her connection stayed open: a call after the rest starts a thread over it, and sees her table.
    assert await store.call(lambda conn: conn.execute("SELECT count(*) FROM t").fetchone()[0]) == 0
    assert store.working
    await store.close()
    assert not store.working


async def test_a_call_in_progress_keeps_her_thread_past_the_idle_time(tmp_path: Path, quick_rest: None) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    release = threading.Event()
    held = asyncio.ensure_future(store.call(lambda conn: release.wait(30)))
    await asyncio.sleep(0.3)  # several idle checks pass while the call runs
    assert store.working and store.busy
    queued = asyncio.ensure_future(store.call(lambda conn: "queued behind it"))
    release.set()
    assert await held is True
    assert await queued == "queued behind it"
    assert await until(lambda: not store.working)
    await store.close()


async def test_close_runs_the_calls_queued_before_it_and_refuses_the_ones_after(tmp_path: Path) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    await store.call(lambda conn: conn.execute("CREATE TABLE t (x)"))
    queued = [store.submit(lambda conn, i: conn.execute("INSERT INTO t VALUES (?)", (i,)) and i, i) for i in range(5)]
    await store.close()
    assert [await f for f in queued] == list(range(5))
    with pytest.raises(ValueError, match="closed"):
        await store.call(lambda conn: None)
    late: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await asyncio.to_thread(store.enqueue, late, lambda conn: None)  # the beat lane's hand-back after close
    with pytest.raises(ValueError, match="closed"):
        await late
    assert store.run_if_free(lambda conn: None) == (False, None)
    check = await AsyncStore(tmp_path / "a.db").open()
    assert await check.call(lambda conn: conn.execute("SELECT count(*) FROM t").fetchone()[0]) == 5
    await check.close()


async def test_close_of_a_store_at_rest_closes_her_connection(tmp_path: Path, quick_rest: None) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    await store.call(lambda conn: conn.execute("CREATE TABLE t (x)"))
    assert await until(lambda: not store.working)
    alive = THREADS.alive
    await store.close()
    assert THREADS.alive == alive
    with pytest.raises(Exception, match="closed"):
        store._conn.execute("SELECT 1")  # type: ignore[union-attr]


async def test_enqueue_from_another_thread_runs_on_her_thread_in_turn(tmp_path: Path, quick_rest: None) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    assert await until(lambda: not store.working)
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    await asyncio.to_thread(store.enqueue, done, lambda conn, x: (threading.current_thread().name, x), 7)
    name, x = await done
    assert x == 7 and name != threading.current_thread().name
    await store.close()


async def test_run_if_free_uses_an_idle_connection_and_never_waits_for_a_busy_one(tmp_path: Path) -> None:
    store = await AsyncStore(tmp_path / "a.db").open()
    assert store.run_if_free(lambda conn: conn.execute("SELECT 4").fetchone()[0]) == (True, 4)
    release = threading.Event()
    entered = threading.Event()

    def hold(conn: Any) -> None:
        entered.set()
        release.wait(30)

    busy = asyncio.ensure_future(store.call(hold))
    assert await asyncio.to_thread(entered.wait, 30)
    assert await asyncio.to_thread(store.run_if_free, lambda conn: 5) == (False, None)
    release.set()
    await busy
    await store.close()


async def test_an_idle_host_s_beats_and_checkpoints_start_no_companion_thread(tmp_path: Path, quick_rest: None) -> None:
    """Her beats run on the beat lane, and so do the checkpoints they leave due: at rest she has no thread."""
    from tests.test_host import advance, served

    handles = [f"c{i:02d}" for i in range(12)]
    async with served(tmp_path, *handles) as (host, clock):
        stores = [host.runtimes[h].ctx.store for h in handles]  # type: ignore[union-attr]
        assert await until(lambda: not any(s.working for s in stores))  # the opening's calls, then rest
        started = THREADS.started
        await advance(host, clock, 100.0)  # 10 beats each: every companion's checkpoint comes due at least once
        assert all(host.runtimes[h].beats >= 9 for h in handles)
        assert await until(lambda: checkpoints(host) >= len(handles))  # they land after their beats' groups
        assert [kw for _, e, kw in host.log.events if e == "component.failed"] == []
        assert THREADS.started == started, "an idle companion started a thread of her own"
        assert host.db_threads()["threads"] == THREADS.alive


def checkpoints(host: Any) -> int:
    return sum(1 for _, event, _ in host.log.events if event == "db.checkpoint")
