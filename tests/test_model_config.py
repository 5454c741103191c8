"""[model]: one model for chat and the consolidation operator; the deprecated [consolidation] keys; where the key comes from."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine import model_config
from engine.consolidate import operator_model
from engine.errors import ConfigError
from engine.settings import ConsolidationSettings, parse_settings


def test_model_section_configures_chat_and_the_consolidation_operator_alike() -> None:
    settings = parse_settings('[model]\nbase_url = "http://127.0.0.1:8080/v1"\nname = "qwen"\n'
                              'api_key_env = "MY_KEY"\ntimeout_s = 12.5\n')
    config = model_config.resolve(settings, {"MY_KEY": "sk-1"})
    assert (config.chat_url, config.name, config.api_key, config.timeout_s) == (
        "http://127.0.0.1:8080/v1/chat/completions", "qwen", "sk-1", 12.5)
    assert model_config.deprecation(config) is None
    operator = operator_model.from_settings(settings, {"MY_KEY": "sk-1"})
    assert operator is not None and operator.url == config.chat_url and operator.name == "qwen"


def test_old_consolidation_keys_still_work_with_one_deprecation_line_naming_keys_not_values() -> None:
    settings = parse_settings('[consolidation]\nmodel_base_url = "http://h:1/v1?key=secret"\nmodel_name = "old"\n')
    config = model_config.resolve(settings, {"ANIMA_MODEL_API_KEY": "sk-old"})
    assert (config.base_url, config.name, config.api_key) == ("http://h:1/v1?key=secret", "old", "sk-old")
    line = model_config.deprecation(config)
    assert line is not None and line["in_force"] is True
    assert "model_base_url" in line["keys"] and "secret" not in str(line)
    assert operator_model.from_settings(settings, {}) is not None


def test_model_section_wins_over_the_old_keys() -> None:
    settings = parse_settings('[model]\nbase_url = "http://new/v1"\n[consolidation]\nmodel_base_url = "http://old/v1"\n')
    config = model_config.resolve(settings, {})
    assert config.base_url == "http://new/v1"
    line = model_config.deprecation(config)
    assert line is not None and line["in_force"] is False


def test_no_model_configured_means_no_operator_and_no_chat() -> None:
    settings = parse_settings("")
    assert not model_config.resolve(settings, {}).configured
    assert operator_model.from_settings(settings, {}) is None


def test_key_comes_from_a_systemd_credential_when_the_environment_has_none(tmp_path: Path) -> None:
    (tmp_path / "ANIMA_MODEL_API_KEY").write_text("sk-cred\n", encoding="utf-8")
    settings = parse_settings('[model]\nbase_url = "http://h/v1"\n')
    config = model_config.resolve(settings, {"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert config.api_key == "sk-cred"
    assert "sk-cred" not in repr(config)  # never in a log line that prints the config
    assert model_config.resolve(settings, {"CREDENTIALS_DIRECTORY": str(tmp_path),
                                           "ANIMA_MODEL_API_KEY": "sk-env"}).api_key == "sk-env"
    assert model_config.resolve(settings, {}).api_key is None


@pytest.mark.parametrize("text", ['[model]\ntimeout_s = 0\n', '[model]\ntemperature = 3.0\n',
                                  '[model]\nbase = "x"\n', '[chat]\ntold_min_overlap = 0\n'])
def test_bad_model_or_chat_settings_are_a_clear_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match=r"\[(model|chat)\]"):
        parse_settings(text)


async def test_the_daemon_logs_one_deprecation_line_for_old_keys_and_chats_through_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.api_support import ApiHarness
    from tests.chat_support import KEY, FakeModel, client

    monkeypatch.setenv("ANIMA_MODEL_API_KEY", KEY)
    fake = await FakeModel().start()
    api = ApiHarness(tmp_path)
    api.settings = dataclasses.replace(api.settings, consolidation=ConsolidationSettings(
        model_base_url=fake.url, model_name="old-name"))
    await api.start()
    try:
        async with client(api.socket_path) as oa:
            got = await oa.chat.completions.create(model="x", messages=[{"role": "user", "content": "在吗"}])
        assert got.choices[0].message.content == fake.reply
        assert fake.requests[-1]["model"] == "old-name" and fake.headers[-1]["Authorization"] == f"Bearer {KEY}"
        (line,) = api.log.named("config.deprecated")
        assert "model_base_url" in line["keys"] and fake.url not in str(line) and KEY not in api.log.text()
    finally:
        await api.stop()
        await fake.stop()


def test_doctor_says_where_the_model_is_and_whether_its_key_is_there_without_the_key_or_path() -> None:
    from daemon.cli.cmd_doctor import check_model

    assert check_model(parse_settings(""), {})["status"] == "skip"
    settings = parse_settings('[model]\nbase_url = "http://127.0.0.1:8080/v1/secret-path?k=1"\nname = "qwen"\n')
    missing = check_model(settings, {})
    assert missing["status"] == "warn" and "ANIMA_MODEL_API_KEY" in missing["detail"]
    found = check_model(settings, {"ANIMA_MODEL_API_KEY": "sk-doctor"})
    assert found["status"] == "ok" and "qwen at http://127.0.0.1:8080" in found["detail"]
    assert "sk-doctor" not in str(found) and "secret-path" not in str(found)
    old = check_model(parse_settings('[consolidation]\nmodel_base_url = "http://h/v1"\n'), {})
    assert old["status"] == "warn" and "deprecated" in old["detail"]
