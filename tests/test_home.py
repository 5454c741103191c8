"""Her own city, zone and role per companion (issue 24 item 7): stored by `anima init`, read back as her settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.cli import main
from engine.home import Home, choose_home, default_home, her_settings, home_of, settings_for
from engine.settings import Settings
from engine.store import connect, migrate
from engine.store.core import get_companion

BIRTH = ["--name", "小满", "--birth", "1998-03-04 05:06"]
S = Settings()


@pytest.fixture(autouse=True)
def _empty_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path_factory.mktemp("config") / "config.toml"
    config.write_text("", encoding="utf-8")   # the [life] defaults
    monkeypatch.setenv("ANIMA_CONFIG", str(config))
    monkeypatch.delenv("ANIMA_TEST_CLOCK_FILE", raising=False)


def _row(db: Path) -> dict:
    conn = connect(db)
    try:
        companion = get_companion(conn)
    finally:
        conn.close()
    assert companion is not None
    return companion


def test_init_stores_her_city_zone_and_role_in_her_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, "--city", "成都", "--tz", "Asia/Shanghai", "--role", "插画师",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["home"] == {"city": "成都", "tz": "Asia/Shanghai", "role": "illustrator", "role_title": "插画师"}
    row = _row(db)
    assert (row["home_city"], row["home_tz"], row["work_role"]) == ("成都", "Asia/Shanghai", "illustrator")
    assert home_of(row, S) == Home("成都", "Asia/Shanghai", "illustrator")


def test_a_zone_alone_picks_the_city_of_her_world_in_it(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, "--tz", "America/New_York", "--role", "中学老师"]) == 0
    row = _row(db)
    assert (row["home_city"], row["home_tz"], row["work_role"]) == ("纽约", "America/New_York", "teacher")
    assert row["birth_tz"] == "America/New_York"
    # --place naming a city of her world is where she lives; her birth zone stays what --tz says
    db2 = tmp_path / "two.db"
    assert main(["--db", str(db2), "init", *BIRTH, "--place", "纽约"]) == 0
    row2 = _row(db2)
    assert (row2["home_city"], row2["home_tz"], row2["birth_tz"]) == ("纽约", "America/New_York", "Asia/Shanghai")


def test_born_in_one_zone_she_may_live_in_another_city(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, "--tz", "Asia/Shanghai", "--place", "杭州", "--city", "纽约"]) == 0
    row = _row(db)
    assert (row["birth_tz"], row["birth_place"]) == ("Asia/Shanghai", "杭州")   # her chart: born in 杭州
    assert (row["home_city"], row["home_tz"]) == ("纽约", "America/New_York")   # her life: in New York


def test_init_without_flags_stores_the_life_defaults(tmp_path: Path) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH]) == 0
    row = _row(db)
    assert (row["home_city"], row["home_tz"], row["work_role"]) == (S.life.city, S.life.tz, "illustrator")


@pytest.mark.parametrize("argv, says", [
    (["--city", "东京"], "unknown city '东京'"),
    (["--role", "厨师"], "unknown role '厨师'"),
    (["--tz", "Mars/Olympus"], "tz must be an IANA time zone such as Asia/Shanghai, got 'Mars/Olympus'"),
    (["--tz", "Europe/Paris"], "no city of her world is in zone 'Europe/Paris'"),
])
def test_bad_home_is_one_line_exit_2_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          argv: list[str], says: str) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not db.exists()
    assert main(["init", "--dir", str(tmp_path), "--id", "a1", *BIRTH, *argv]) == 2
    assert list(tmp_path.iterdir()) == []


def test_init_into_a_directory_stores_her_home(tmp_path: Path) -> None:
    assert main(["init", "--dir", str(tmp_path), "--id", "ny", *BIRTH, "--city", "纽约", "--role", "nurse"]) == 0
    row = _row(tmp_path / "ny.db")
    assert (row["home_city"], row["home_tz"], row["work_role"], row["handle"]) == (
        "纽约", "America/New_York", "nurse", "ny")


def test_a_file_from_before_lives_by_the_life_defaults(tmp_path: Path) -> None:
    conn = connect(tmp_path / "old.db")
    try:
        migrate(conn, now=0)
        from engine.companion import create_companion

        companion = create_companion(conn, name="旧", birth_local="1998-03-04 05:06", tz="Asia/Shanghai",
                                     place=None, sect=2, now=0)   # no home: as a file from before 0016
    finally:
        conn.close()
    assert companion["home_city"] is None
    assert home_of(companion, S) == default_home(S) == Home("杭州", "Asia/Shanghai", "illustrator")
    assert her_settings(S, companion) is S   # exactly today's settings object: old files behave as before


def test_her_settings_carry_her_home_and_are_shared_by_one_place() -> None:
    ny = choose_home(S, city_name="纽约", role_name="程序员")
    assert ny == Home("纽约", "America/New_York", "programmer")
    hers = settings_for(S, ny)
    assert (hers.life.city, hers.life.tz, hers.life.role) == ("纽约", "America/New_York", "programmer")
    assert settings_for(S, ny) is hers   # one object per place: engine/life caches stay one entry per place
    assert hers.memory is S.memory and hers.life.trace_interval_s == S.life.trace_interval_s


def test_status_shows_her_home(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, "--city", "纽约", "--role", "护士"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "status", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["companion"]["home"] == {"city": "纽约", "tz": "America/New_York", "role": "nurse",
                                           "role_title": "护士"}
    assert main(["--db", str(db), "status"]) == 0
    assert "lives in 纽约 (America/New_York), works as 护士" in capsys.readouterr().out


async def test_v1_state_shows_her_home_and_her_zone(tmp_path: Path) -> None:
    from engine.companion import create_companion
    from tests.api_support import T0, ApiHarness

    harness = ApiHarness(tmp_path)
    conn = connect(harness.db_path)
    try:
        migrate(conn, now=T0)
        create_companion(conn, name="小满", birth_local="1998-03-04 05:06", tz="Asia/Shanghai", place=None, sect=2,
                         now=T0, home=choose_home(S, city_name="纽约", role_name="程序员"))
    finally:
        conn.close()
    await harness.start()
    try:
        status, state = await harness.call("GET", "/v1/state")
    finally:
        await harness.stop()
    assert status == 200
    assert state["home"] == {"city": "纽约", "tz": "America/New_York", "role": "programmer", "role_title": "程序员"}
    assert state["tz"] == "America/New_York" and state["now_iso"][-6:] in ("-05:00", "-04:00")


def test_simulate_lives_in_her_files_home_or_the_one_asked_for(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, "--city", "纽约", "--role", "护士"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "simulate", "--days", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["home"]["city"] == "纽约" and report["start"] == "2025-01-06T04:00:00-0500"
    assert main(["--db", str(db), "simulate", "--days", "1", "--city", "成都", "--role", "程序员", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["home"] == {"city": "成都", "tz": "Asia/Shanghai", "role": "programmer", "role_title": "程序员"}
    assert main(["--db", str(db), "simulate", "--days", "1", "--city", "东京"]) == 2
    assert "unknown city '东京'" in capsys.readouterr().err


def test_status_of_a_directory_gives_each_companion_her_home(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--dir", str(tmp_path), "--id", "ny", *BIRTH, "--city", "纽约", "--role", "中学老师"]) == 0
    assert main(["init", "--dir", str(tmp_path), "--id", "hz", *BIRTH]) == 0
    capsys.readouterr()
    assert main(["status", "--dir", str(tmp_path), "--json"]) == 0
    rows = {r["companion"]: r for r in json.loads(capsys.readouterr().out)["companions"]}
    assert rows["ny"]["home"]["tz"] == "America/New_York" and rows["ny"]["home"]["role_title"] == "中学老师"
    assert rows["hz"]["home"]["city"] == "杭州"


def test_cli_times_without_an_offset_are_in_her_zone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import datetime
    from zoneinfo import ZoneInfo

    db = tmp_path / "her.db"
    assert main(["--db", str(db), "init", *BIRTH, "--city", "纽约"]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "life", "add", "小时候养过一只猫", "--ts", "2025-01-06T09:00", "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["ts"] == datetime(2025, 1, 6, 9, 0, tzinfo=ZoneInfo("America/New_York")).timestamp()
