"""One mapping from driver and OS errors to storage states, and the 503 a client sees for a full disk."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from daemon.api.errors import classify
from engine.errors import DamagedStoreError, StorageFullError, StoreError
from engine.store.connect import connect, driver_error, sqlite_module, store_fault


def _sqlite_error(code: int, name: str) -> Exception:
    exc = sqlite_module().OperationalError("boom")
    exc.sqlite_errorcode = code
    exc.sqlite_errorname = name
    return exc


def test_enospc_and_sqlite_full_are_storage_full(tmp_path: Path) -> None:
    assert isinstance(store_fault(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "a.db"), StorageFullError)
    assert isinstance(store_fault(_sqlite_error(13, "SQLITE_FULL"), tmp_path / "a.db"), StorageFullError)


def test_an_io_error_is_storage_full_only_when_the_filesystem_is_full(tmp_path: Path) -> None:
    # tmp_path has room: an I/O error there is something else, reported as such (not as a full disk).
    assert store_fault(_sqlite_error(4874, "SQLITE_IOERR_SHMSIZE"), tmp_path / "a.db") is None
    other = driver_error(_sqlite_error(4874, "SQLITE_IOERR_SHMSIZE"), tmp_path / "a.db")
    assert type(other) is StoreError and "SQLITE_IOERR_SHMSIZE" in str(other)


def test_corrupt_and_notadb_are_damaged(tmp_path: Path) -> None:
    for code, name in ((11, "SQLITE_CORRUPT"), (26, "SQLITE_NOTADB"), (267, "SQLITE_CORRUPT_VTAB")):
        fault = store_fault(_sqlite_error(code, name), tmp_path / "a.db")
        assert isinstance(fault, DamagedStoreError) and fault.exit_code == 2, name


def test_other_errors_are_not_storage_states() -> None:
    assert store_fault(ValueError("x")) is None
    assert store_fault(_sqlite_error(1, "SQLITE_ERROR")) is None


def test_a_full_disk_is_a_503_storage_full_with_a_message_that_says_what_to_do() -> None:
    status, body = classify(StorageFullError("the disk holding the database /var/lib/anima/her.db is full"))
    assert status == 503 and body["error"]["code"] == "storage_full"
    assert "full" in body["error"]["message"] and "changed nothing" in body["error"]["message"]
    assert "/var/lib" not in body["error"]["message"]  # paths stay in the operator's log


def test_an_in_memory_database_leaves_no_file_named_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    conn = connect(":memory:")
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    assert list(tmp_path.iterdir()) == []
