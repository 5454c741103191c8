"""Config: config.toml mirrors the embedded defaults; bad config is a clear error and nothing starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.settings import Settings, parse_settings
from tests.conftest import REPO, run_anima


def test_config_toml_lists_exactly_the_embedded_defaults() -> None:
    assert parse_settings((REPO / "config.toml").read_text(encoding="utf-8")) == Settings()


def test_every_setting_in_config_toml_has_a_comment() -> None:
    for line in (REPO / "config.toml").read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.lstrip().startswith("#") and not line.startswith("text_weight"):
            assert "#" in line, f"setting without a one-line comment: {line}"


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("[heartbeat\ninterval_s = 1", ["not valid TOML"]),
        ("[heartbeat]\nintervals = 1", ["[heartbeat]", "'intervals'"]),
        ("[nosuch]\nx = 1", ["[nosuch]"]),
        ('[heartbeat]\ninterval_s = "fast"', ["[heartbeat] interval_s", "number", "'fast'"]),
        ("[heartbeat]\ninterval_s = 0.1", ["interval_s must be a number of seconds from 1 to 3600"]),
        ("[heartbeat]\ninterval_s = inf", ["[heartbeat] interval_s must be a finite number, got inf"]),
        ("[heartbeat]\ninterval_s = nan", ["[heartbeat] interval_s must be a finite number"]),
        ("[heartbeat]\ninterval_s = 86400", ["interval_s must be a number of seconds from 1 to 3600"]),
        ("[mood]\nhalf_life_v_h = inf", ["[mood] half_life_v_h must be a finite number"]),
        ("x = " + "[" * 5000 + "]" * 5000, ["nested too deeply"]),
        ('[log]\nformat = "xml"', ["[log] format"]),
        ("[memory]\nk = 2.5", ["[memory] k", "integer"]),
    ],
)
def test_bad_config_names_the_key_and_problem(text: str, needles: list[str]) -> None:
    with pytest.raises(ConfigError) as err:
        parse_settings(text, "my.toml")
    message = str(err.value)
    assert message.startswith("my.toml")
    for needle in needles:
        assert needle in message


@pytest.mark.parametrize("text", ["[heartbeat\n", "[heartbeat]\nbogus = 1\n", '[api]\ntcp_port = "x"\n'])
def test_daemon_with_bad_config_exits_2_without_touching_the_database(tmp_path: Path, text: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    db = tmp_path / "never.db"
    result = run_anima("--config", str(config), "--db", str(db), "run")
    assert result.code == 2
    assert str(config) in result.err
    assert not db.exists()


def test_anima_config_env_is_honoured(tmp_path: Path) -> None:
    config = tmp_path / "env.toml"
    config.write_text("[database]\npath = 5\n")
    result = run_anima("status", env={"ANIMA_CONFIG": str(config)})
    assert result.code == 2
    assert "[database] path must be a string" in result.err


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    result = run_anima("--config", str(tmp_path / "nope.toml"), "status")
    assert result.code == 2
    assert "config file not found" in result.err


def test_a_retired_key_in_an_old_config_still_loads_and_does_nothing() -> None:
    """update_boost_present (before issue 27's supersession) in an operator's config must not stop the daemon."""
    assert parse_settings("[memory]\nupdate_boost_present = 0.3\n") == Settings()
