"""SQLite's lookaside pool off on a companion's connection (engine/store/lookaside.py), read back through SQLite itself."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from engine.store import connect, migrate
from engine.store.lookaside import _handle, _library, disable_lookaside
from tests.api_support import T0

SQLITE_DBSTATUS_LOOKASIDE_USED = 0


def lookaside_high_water(conn: Any, path: Path) -> int:
    """The most lookaside slots this connection has held at once (sqlite3_db_status)."""
    lib = _library(conn)
    handle = _handle(conn, lib, path)
    assert handle is not None, "the connection's handle names its file"
    lib.sqlite3_db_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    current, high = ctypes.c_int(), ctypes.c_int()
    assert lib.sqlite3_db_status(handle, SQLITE_DBSTATUS_LOOKASIDE_USED, ctypes.byref(current), ctypes.byref(high), 0) == 0
    return high.value


def used_connection(path: Path, **kw: Any) -> Any:
    conn = connect(path, **kw)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    conn.execute("SELECT * FROM life_control").fetchall()
    return conn


def test_a_connection_without_lookaside_takes_no_slot_where_a_default_one_does(tmp_path: Path) -> None:
    path = tmp_path / "anima.db"
    conn = connect(path)
    migrate(conn, T0)
    conn.close()
    plain, bare = used_connection(path), used_connection(path, lookaside=False)
    try:
        assert lookaside_high_water(plain, path) > 0  # schema parsing fills the pool on a default connection
        assert lookaside_high_water(bare, path) == 0
        assert bare.execute("SELECT count(*) FROM life_control").fetchone()[0] >= 0  # and it works as any other
    finally:
        plain.close()
        bare.close()


def test_the_pool_is_left_alone_when_the_handle_does_not_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "anima.db"
    conn = connect(path)
    try:
        assert not disable_lookaside(conn, tmp_path / "other.db")  # a pointer is trusted only when it opens `path`
        assert not disable_lookaside(conn, path)  # and only before the first statement: in use, SQLite says busy
    finally:
        conn.close()


async def test_every_companion_connection_of_a_host_runs_without_the_pool(tmp_path: Path) -> None:
    from tests.test_host import advance, served

    async with served(tmp_path, "a1", "b2") as (host, clock):
        await advance(host, clock, 12.0)  # a beat each: her schema read, her life stepped
        for handle in ("a1", "b2"):
            ctx = host.get(handle)
            assert ctx is not None
            assert await ctx.store.call(lookaside_high_water, tmp_path / f"{handle}.db") == 0
