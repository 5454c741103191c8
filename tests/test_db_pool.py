"""The DB pool (daemon/db_pool.py) under AsyncStore: a connection's calls in order on one thread at a time,
a slow connection holding only its own thread, and a host of companions sharing a few threads.

A thread per connection (aiosqlite's design) cost a thousand-companion host 45 KiB of RSS each; these
tests pin what the shared pool must keep of that design (order, isolation) and what it must not
(a thread per idle connection).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from daemon.db import AsyncStore
from daemon.db_pool import DbPool


async def open_stores(tmp_path: Path, pool: DbPool, count: int) -> list[AsyncStore]:
    return [await AsyncStore(tmp_path / f"c{i}.db", pool=pool).open() for i in range(count)]


async def burst(pool: DbPool, stores: list[AsyncStore]) -> int:
    """A call on every store at once, each held until all are on a thread of its own; the pool's threads then."""
    release = threading.Event()
    entered = threading.Semaphore(0)

    def hold(conn: Any) -> None:
        entered.release()
        release.wait(30)

    held = [asyncio.ensure_future(store.call(hold)) for store in stores]
    try:
        for _ in stores:
            assert await asyncio.to_thread(entered.acquire, True, 30)
        threads = pool.threads
    finally:
        release.set()
    await asyncio.gather(*held)
    return threads


async def test_calls_on_one_connection_run_in_order_and_never_at_once(tmp_path: Path) -> None:
    pool = DbPool()
    store = await AsyncStore(tmp_path / "a.db", pool=pool).open()
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

    # Several connections busy at once, so the pool runs more than one thread while this one's calls queue.
    others = await open_stores(tmp_path, pool, 4)
    results = await asyncio.gather(*(store.call(step, i) for i in range(200)),
                                   *(other.call(lambda conn: conn.execute("SELECT 1").fetchone())
                                     for other in others for _ in range(50)))
    assert results[:200] == list(range(200))
    assert order == list(range(200))
    assert most_inside == 1
    for s in [store, *others]:
        await s.close()


async def test_a_slow_call_holds_only_its_own_connection(tmp_path: Path) -> None:
    pool = DbPool()
    slow, quick = await open_stores(tmp_path, pool, 2)
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
    store = await AsyncStore(tmp_path / "a.db", pool=DbPool()).open()

    def broken(conn: Any) -> None:
        conn.execute("SELECT * FROM no_such_table")

    with pytest.raises(Exception, match="no_such_table"):
        await store.call(broken)
    assert await store.call(lambda conn: conn.execute("SELECT 3").fetchone()[0]) == 3
    await store.close()


async def test_many_idle_connections_share_one_thread(tmp_path: Path) -> None:
    """A host's companions, each called in turn (beats, checkpoints): one thread serves them all."""
    pool = DbPool()
    stores = await open_stores(tmp_path, pool, 50)
    for store in stores:
        assert await store.call(lambda conn: conn.execute("PRAGMA user_version").fetchone()[0]) == 0
    assert pool.started == 1
    assert pool.threads == 1
    for store in stores:
        await store.close()


async def test_threads_busy_at_once_leave_once_idle(tmp_path: Path) -> None:
    pool = DbPool(idle_exit_s=0.05)
    stores = await open_stores(tmp_path, pool, 6)
    assert await burst(pool, stores) == 6
    deadline = time.monotonic() + 30  # a bound for a slow machine, not a timing assertion
    while pool.threads > pool.min_threads and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert pool.threads == pool.min_threads
    assert pool.peak_threads == 6
    for store in stores:
        await store.close()


async def test_a_steady_trickle_of_calls_keeps_one_thread_and_lets_a_burst_s_threads_leave(tmp_path: Path) -> None:
    """An idle host still calls a few times a second (checkpoints): the most recently idle thread takes
    each call, so the others stay idle long enough to leave. Waking the longest-idle thread first (as
    threading.Condition does) gave every thread a call in turn, and none ever left."""
    pool = DbPool(idle_exit_s=0.2)
    stores = await open_stores(tmp_path, pool, 4)
    await burst(pool, stores)
    assert pool.threads == 4
    deadline = time.monotonic() + 30  # a bound for a slow machine, not a timing assertion
    calls = 0
    while pool.threads > pool.min_threads and time.monotonic() < deadline:
        await stores[calls % 4].call(lambda conn: conn.execute("SELECT 1").fetchone())  # one at a time, no pause
        calls += 1
    assert pool.threads == pool.min_threads
    assert calls > 4  # the trickle ran while the others timed out
    for store in stores:
        await store.close()


async def test_close_runs_the_calls_queued_before_it_and_refuses_the_ones_after(tmp_path: Path) -> None:
    store = await AsyncStore(tmp_path / "a.db", pool=DbPool()).open()
    await store.call(lambda conn: conn.execute("CREATE TABLE t (x)"))
    queued = [store.submit(lambda conn, i: conn.execute("INSERT INTO t VALUES (?)", (i,)) and i, i) for i in range(5)]
    await store.close()
    assert [await f for f in queued] == list(range(5))
    with pytest.raises(ValueError, match="closed"):
        await store.call(lambda conn: None)
    late: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    store.enqueue(late, lambda conn: None)  # the beat lane's hand-back after close
    with pytest.raises(ValueError, match="closed"):
        await late
    assert store.run_if_free(lambda conn: None) == (False, None)
    check = await AsyncStore(tmp_path / "a.db", pool=DbPool()).open()
    assert await check.call(lambda conn: conn.execute("SELECT count(*) FROM t").fetchone()[0]) == 5
    await check.close()


async def test_run_if_free_uses_an_idle_connection_and_never_waits_for_a_busy_one(tmp_path: Path) -> None:
    store = await AsyncStore(tmp_path / "a.db", pool=DbPool()).open()
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


async def test_a_host_of_many_companions_holds_a_few_db_threads(tmp_path: Path) -> None:
    """Each companion held a thread of her own: 24 companions, 24 threads. They share a few now."""
    from tests.test_host import advance, served

    handles = [f"c{i:02d}" for i in range(24)]
    async with served(tmp_path, *handles) as (host, clock):
        await advance(host, clock, 60.0)  # every companion beats several times, some on her lane (checkpoints)
        assert all(host.runtimes[h].beats >= 3 for h in handles)
        threads = host.db_threads()
        # Opening runs OPEN_CONCURRENCY files at once; beats and checkpoints come a few at a time.
        assert threads["peak"] <= 8 < len(handles)
        assert threads["threads"] <= threads["peak"]
