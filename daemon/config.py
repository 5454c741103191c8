"""Find and load config.toml: --config, else $ANIMA_CONFIG, else ./config.toml, else embedded defaults.

Also what a SIGHUP may change live (`live_reload`) and where each effective setting came from
(`setting_sources`, for `anima config show`).
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from daemon.logs import configure_logging
from engine.errors import AnimaError, ConfigError
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
    return parse_settings(read_config_text(path), str(path)), path


MAX_CONFIG_BYTES = 1 << 20  # a config.toml is a few KiB; a link to /dev/zero must not fill memory


def read_config_text(path: Path) -> str:
    """The config file's text: a regular file (or a device such as /dev/null) of at most MAX_CONFIG_BYTES,
    UTF-8; ConfigError (one line) else. A FIFO is refused before any read (it would hang, or read as empty)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: a FIFO must not hang the open
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found; pass --config PATH or unset ANIMA_CONFIG") from None
    except OSError as exc:
        raise ConfigError(f"{path}: config file cannot be read: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):  # a device is read bounded: /dev/null is "no settings"
        os.close(fd)
        raise ConfigError(f"{path}: config is not a regular file (a directory, FIFO or socket?); "
                          "give the config.toml file")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"{path}: config file cannot be read: {exc.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: config file is larger than {MAX_CONFIG_BYTES} bytes; it is not a config.toml")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not UTF-8 text") from None


# Settings a part turns into something at start (a bound socket, a loaded model, an open file, a
# thread pool, a created companion): a SIGHUP cannot change them under a running part, so a reload
# keeps the running value and names the key. Everything else is read per request or per beat.
RESTART_NEEDED: frozenset[str] = frozenset({
    "database.*", "companion.*", "api.*",
    "memory.embedding_provider", "memory.embedding_model", "memory.embedding_url", "memory.embedding_api_key_env",
    "memory.embedding_dim", "memory.embedding_threads", "memory.query_embedding_threads", "memory.ram_index_from",
    # Which directory is served is the process's identity; watch_s (read at each watch) and
    # cache_budget_mb (set again on reload, evicting at once) apply live.
    "daemon.companions_dir",
})


def needs_restart(key: str) -> bool:
    """Whether `section.key` only takes effect at the next start."""
    return key in RESTART_NEEDED or f"{key.partition('.')[0]}.*" in RESTART_NEEDED


def flat_settings(settings: Settings) -> dict[str, Any]:
    """Every setting as 'section.key' -> value, in declaration order."""
    out: dict[str, Any] = {}
    for section in dataclasses.fields(settings):
        values = getattr(settings, section.name)
        for f in dataclasses.fields(values):
            out[f"{section.name}.{f.name}"] = getattr(values, f.name)
    return out


def live_reload(running: Settings, fresh: Settings) -> tuple[Settings, list[str], list[str]]:
    """What a SIGHUP does with freshly read settings: (settings to run with, keys applied, keys needing a restart).

    Applied keys take their new value; restart-needed keys keep the running value, so what the
    daemon reports is what it does.
    """
    old, new = flat_settings(running), flat_settings(fresh)
    changed = [key for key in new if new[key] != old[key]]
    applied = [key for key in changed if not needs_restart(key)]
    restart = [key for key in changed if needs_restart(key)]
    sections: dict[str, Any] = {}
    for section in dataclasses.fields(running):
        name = section.name
        updates = {k.partition(".")[2]: new[k] for k in applied if k.startswith(name + ".")}
        current = getattr(running, name)
        sections[name] = dataclasses.replace(current, **updates) if updates else current
    return Settings(**sections), applied, restart


def setting_sources(explicit: str | None = None) -> list[dict[str, Any]]:
    """`anima config show`: each effective setting, its value, and where it came from (file or default)."""
    settings, path = load_settings(explicit)
    in_file: set[str] = set()
    if path is not None:
        raw = tomllib.loads(read_config_text(path))  # already validated by load_settings
        in_file = {f"{section}.{key}" for section, table in raw.items() for key in table}
    origin = str(path) if path is not None else None
    rows = []
    for key, value in flat_settings(settings).items():
        source = origin if key in in_file else "default"
        rows.append({"key": key, "value": value, "source": source, "restart_needed": needs_restart(key)})
    return rows


def reload_settings(running: Settings, config_file: Path | None, log: Any) -> Settings | None:
    """SIGHUP, for single-file mode and a directory host alike: the settings to run with now, or None.

    config.toml is read again; what can change live is applied, what a part built at start from a
    setting (the socket, the model, the database path) keeps its running value and is logged as
    `config.deferred`, so what the daemon reports is what it does. A file that no longer parses
    changes nothing (`config.reload_failed`).
    """
    try:
        fresh, _ = load_settings(str(config_file) if config_file else None)
    except AnimaError as exc:
        log.error("config.reload_failed", error=str(exc))
        return None
    merged, applied, restart = live_reload(running, fresh)
    if merged.log != running.log:
        configure_logging(merged.log.format, merged.log.level)
    log.info("config.reloaded", applied=applied, heartbeat_s=merged.heartbeat.interval_s,
             log_format=merged.log.format, log_level=merged.log.level)
    if restart:
        log.warning("config.deferred", keys=restart)
    return merged
