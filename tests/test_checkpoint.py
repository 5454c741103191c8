"""WAL checkpoints run beside the daemon's connection, never inside its COMMITs."""

from __future__ import annotations

import os
from pathlib import Path

from daemon.checkpoint import WalCheckpointer, hand_over_checkpoints
from tests.memory_helpers import fresh_db


def wal_bytes(db: Path) -> int:
    wal = db.with_name(db.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_the_daemon_connection_leaves_checkpoints_to_the_checkpointer(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    conn = fresh_db(db)
    hand_over_checkpoints(conn)
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    conn.execute("CREATE TABLE filler (x BLOB)")
    for _ in range(1500):  # past the 1,000 pages at which a COMMIT would checkpoint by itself
        conn.execute("INSERT INTO filler VALUES (?)", (os.urandom(4000),))
    checkpointer = WalCheckpointer(db)
    busy, frames, copied = await checkpointer.run()
    assert busy == 0 and frames >= 1500 and copied == frames  # every frame was left to it, and copied
    # The next write starts the WAL over from the beginning instead of growing it.
    size = wal_bytes(db)
    conn.execute("INSERT INTO filler VALUES (x'00')")
    assert wal_bytes(db) <= size
    assert (await checkpointer.run())[1] == 1
    await checkpointer.close()
    assert conn.execute("SELECT count(*) FROM filler").fetchone()[0] == 1501


async def test_a_wal_past_the_soft_limit_is_truncated_even_while_writes_go_on(tmp_path: Path) -> None:
    from daemon.checkpoint import WAL_SOFT_LIMIT_BYTES

    db = tmp_path / "a.db"
    conn = fresh_db(db)
    hand_over_checkpoints(conn)
    conn.execute("CREATE TABLE filler (x BLOB)")
    checkpointer = WalCheckpointer(db)
    assert await checkpointer.enforce_limit() is False  # small: left to the per-beat PASSIVE checkpoint
    while wal_bytes(db) <= WAL_SOFT_LIMIT_BYTES:
        conn.execute("INSERT INTO filler VALUES (?)", (os.urandom(4000),))
    assert await checkpointer.enforce_limit() is True
    assert wal_bytes(db) == 0
    conn.execute("INSERT INTO filler VALUES (x'00')")  # the writer goes on, from a fresh log
    assert 0 < wal_bytes(db) < WAL_SOFT_LIMIT_BYTES
    await checkpointer.close()
    conn.close()
