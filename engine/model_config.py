"""The one chat model: [model] settings (or the deprecated [consolidation] model_* keys) resolved with its key.

Chat replies (POST /v1/chat/completions) and the consolidation operator call the same OpenAI-compatible
API, so one section configures it. The old `[consolidation] model_base_url/model_name/model_api_key_env/
model_timeout_s` keys still work for a release when `[model] base_url` is empty; `deprecation()` names the
line the daemon logs once. The key comes from the environment variable `api_key_env` names, else from
the systemd credential of that name (`$CREDENTIALS_DIRECTORY/<name>`, LoadCredential=): it is held in
memory only, never logged (its repr is hidden) and never written to her file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.settings import ConsolidationSettings, ModelSettings, Settings

_OLD = ConsolidationSettings()
MAX_KEY_BYTES = 16384  # a credential file larger than this is not a key


@dataclass(frozen=True)
class ModelConfig:
    """Where the model is and how to call it; `api_key` is never shown by repr (so never in a log line)."""

    base_url: str
    name: str
    api_key_env: str
    timeout_s: float
    connect_timeout_s: float = 5.0
    max_tokens: int = 0
    temperature: float = -1.0
    api_key: str | None = field(default=None, repr=False)
    deprecated_keys: tuple[str, ...] = ()  # the [consolidation] model_* keys set in the config, if any
    from_deprecated: bool = False  # True: those keys are in force ([model] base_url is empty)

    @property
    def configured(self) -> bool:
        return bool(self.base_url)

    @property
    def chat_url(self) -> str:
        """The Chat Completions URL: base_url as given when it already names the path, else base_url + it."""
        url = self.base_url.rstrip("/")
        return url if url.endswith("/chat/completions") else url + "/chat/completions"

    def headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json"}
        if self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out


def _old_keys_in_use(cs: ConsolidationSettings) -> tuple[str, ...]:
    """The deprecated [consolidation] model_* keys set to something other than their defaults."""
    names = ("model_base_url", "model_name", "model_api_key_env", "model_timeout_s")
    return tuple(n for n in names if getattr(cs, n) != getattr(_OLD, n))


def read_key(env_name: str, environ: Mapping[str, str]) -> str | None:
    """The key from the environment, else from the systemd credential file of the same name; None when neither."""
    if not env_name:
        return None
    value = environ.get(env_name)
    if value:
        return value.strip()
    cred_dir = environ.get("CREDENTIALS_DIRECTORY")
    if cred_dir and "/" not in env_name and env_name not in (".", ".."):
        path = Path(cred_dir) / env_name
        try:
            if path.is_file() and path.stat().st_size <= MAX_KEY_BYTES:
                return path.read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError):
            return None
    return None


def resolve(settings: Settings, environ: Mapping[str, str] | None = None) -> ModelConfig:
    """The model config in force: [model], or the deprecated [consolidation] keys when [model] base_url is empty."""
    env = os.environ if environ is None else environ
    ms: ModelSettings = settings.model
    cs = settings.consolidation
    old = _old_keys_in_use(cs)
    if not ms.base_url and cs.model_base_url:
        return ModelConfig(base_url=cs.model_base_url, name=cs.model_name or ms.name or "default",
                           api_key_env=cs.model_api_key_env, timeout_s=cs.model_timeout_s,
                           connect_timeout_s=ms.connect_timeout_s, max_tokens=ms.max_tokens,
                           temperature=ms.temperature, api_key=read_key(cs.model_api_key_env, env),
                           deprecated_keys=old, from_deprecated=True)
    return ModelConfig(base_url=ms.base_url, name=ms.name or "default", api_key_env=ms.api_key_env,
                       timeout_s=ms.timeout_s, connect_timeout_s=ms.connect_timeout_s, max_tokens=ms.max_tokens,
                       temperature=ms.temperature, api_key=read_key(ms.api_key_env, env), deprecated_keys=old)


def deprecation(config: ModelConfig) -> dict[str, Any] | None:
    """The fields of the one `config.deprecated` log line when old keys are set (names only: a URL may hold a key)."""
    if not config.deprecated_keys:
        return None
    return {"keys": ",".join(f"[consolidation] {k}" for k in config.deprecated_keys),
            "use": "[model] base_url, name, api_key_env, timeout_s", "in_force": config.from_deprecated}
