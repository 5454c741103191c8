"""`anima init --dir DIR --id HANDLE` and `anima run --dir` argument checks, in process."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.cli import main
from engine.store import connect
from engine.store.core import get_companion

BIRTH = ["--name", "A", "--birth", "1998-04-12 09:30"]


def test_init_into_a_directory_records_her_handle_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    assert main(["init", "--dir", str(tmp_path), "--id", "a1", *BIRTH]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a1.db"]
    conn = connect(tmp_path / "a1.db", readonly=True)
    try:
        companion = get_companion(conn)
        assert companion is not None and companion["handle"] == "a1" and companion["name"] == "A"
    finally:
        conn.close()


def test_init_refuses_an_existing_file_and_leaves_it_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--dir", str(tmp_path), "--id", "a1", *BIRTH]) == 0
    before = (tmp_path / "a1.db").read_bytes()
    assert main(["init", "--dir", str(tmp_path), "--id", "a1", "--name", "B", "--birth", "2000-01-01 00:00"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (tmp_path / "a1.db").read_bytes() == before


@pytest.mark.parametrize("argv, message", [
    (["--id", "Bad!"], "not a valid handle"),
    (["--id", "a1"], "--dir and --id go together"),
    (["--dir", "{dir}"], "--dir and --id go together"),
    (["--dir", "{dir}/missing", "--id", "a1"], "does not exist"),
])
def test_init_refuses_bad_directory_arguments_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          argv: list[str], message: str) -> None:
    argv = [a.replace("{dir}", str(tmp_path)) for a in argv]
    if "--dir" not in argv:
        argv = ["--dir", str(tmp_path), *argv] if "Bad!" in argv else argv
    assert main(["init", *argv, *BIRTH]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.glob("*.db")) == []


def test_run_refuses_a_missing_directory_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--dir", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_run_refuses_both_db_and_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", str(tmp_path / "x.db"), "run", "--dir", str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err
