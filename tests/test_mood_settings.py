"""The [mood] keys of config.toml: the shipped file matches the engine defaults, and bad values name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import mood as m
from engine.errors import ConfigError
from engine.settings import parse_settings

ROOT = Path(__file__).resolve().parents[1]


def test_config_toml_mood_keys_are_the_mood_model_defaults() -> None:
    shipped = parse_settings((ROOT / "config.toml").read_text(encoding="utf-8")).mood
    default = m.MoodParams()
    assert shipped.emotion_half_life_min == default.emotion_half_life_min
    assert shipped.mood_gain == default.mood_gain
    assert shipped.tone_sd == default.tone_sd
    assert shipped.tone_persistence == default.tone_persistence
    assert (shipped.half_life_v_h, shipped.half_life_a_h, shipped.half_life_d_h) == default.half_life_h
    assert "negative_half_life_factor" not in (ROOT / "config.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(("key", "value"), [("mood_gain", 1.0), ("mood_gain", -0.1), ("emotion_half_life_min", 0),
                                            ("tone_sd", 0.9), ("tone_persistence", 0.95)])
def test_a_bad_mood_value_is_a_config_error_naming_the_key(key: str, value: float) -> None:
    with pytest.raises(ConfigError, match=key):
        parse_settings(f"[mood]\n{key} = {value}\n")
