"""Find and load config.toml: --config, else $ANIMA_CONFIG, else ./config.toml, else embedded defaults."""

from __future__ import annotations

import os
from pathlib import Path

from engine.errors import ConfigError
from engine.settings import Settings, parse_settings


def config_path(explicit: str | None) -> Path | None:
    """The config file to read, or None for embedded defaults."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get("ANIMA_CONFIG")
    if from_env:
        return Path(from_env)
    local = Path("config.toml")
    return local if local.exists() else None


def load_settings(explicit: str | None = None) -> tuple[Settings, Path | None]:
    path = config_path(explicit)
    if path is None:
        return Settings(), None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found; pass --config PATH or unset ANIMA_CONFIG") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not UTF-8 text") from None
    return parse_settings(text, str(path)), path
