"""READDOD_<SECTION>_<KEY> overrides, and `readdod config` showing the effective config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from readdod.errors import ConfigError
from readdod.settings import config


def _env(**values: str) -> dict[str, str]:
    return {f"READDOD_{k.upper()}": v for k, v in values.items()}


def test_overrides_are_typed_by_the_field() -> None:
    cfg, applied = config.apply_env(
        config.Config(),
        _env(
            daemon_concurrency="3",
            daemon_shutdown_grace_s="2.5",
            daemon_auto_process="false",
            daemon_synchronous="NORMAL",
            fetch_user_agent="probe/1",
            log_format="console",
            log_file="",
        ),
    )
    assert cfg.daemon.concurrency == 3
    assert cfg.daemon.shutdown_grace_s == 2.5
    assert cfg.daemon.auto_process is False
    assert cfg.daemon.synchronous == "NORMAL"
    assert cfg.fetch.user_agent == "probe/1"
    assert cfg.log.format == "console"
    assert cfg.log.file is None
    assert applied == sorted(applied) and len(applied) == 7


def test_list_fields_take_commas_or_json() -> None:
    if "allowed_uids" not in {f.name for f in msgspec.structs.fields(config.ControlConfig)}:
        pytest.skip("control.allowed_uids not in this build")
    name = "READDOD_CONTROL_ALLOWED_UIDS"
    cfg, _ = config.apply_env(config.Config(), {name: "1000, 1001"})
    assert cfg.control.allowed_uids == [1000, 1001]
    cfg, _ = config.apply_env(config.Config(), {name: "[7]"})
    assert cfg.control.allowed_uids == [7]
    with pytest.raises(ConfigError, match=name):
        config.apply_env(config.Config(), {name: "1000,bob"})


def test_an_override_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[daemon]\nconcurrency = 5\nbatch_size = 7\n")
    cfg, found, applied = config.load_with_overrides(
        str(path), {"READDOD_DAEMON_CONCURRENCY": "2", "READDOD_CONFIG": "ignored"}
    )
    assert found == path and applied == ["READDOD_DAEMON_CONCURRENCY"]
    assert (cfg.daemon.concurrency, cfg.daemon.batch_size) == (2, 7)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"READDOD_DAEMON_CONCURENCY": "3"}, "READDOD_DAEMON_CONCURENCY"),
        ({"READDOD_DAEMON_CONCURRENCY": "0"}, "READDOD_DAEMON_CONCURRENCY"),
        ({"READDOD_DAEMON_CONCURRENCY": "many"}, "READDOD_DAEMON_CONCURRENCY"),
        ({"READDOD_DAEMON_AUTO_PROCESS": "perhaps"}, "READDOD_DAEMON_AUTO_PROCESS"),
        ({"READDOD_LOG_FORMAT": "xml"}, "READDOD_LOG_FORMAT"),
        ({"READDOD_LOG_LEVEL": "[1"}, "READDOD_LOG_LEVEL"),
    ],
)
def test_bad_overrides_name_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        config.apply_env(config.Config(), env)
    assert needle in str(exc.value)


def test_variables_outside_the_sections_are_not_overrides() -> None:
    env = {"READDOD_SOCKET": "/x", "READDOD_CONFIG": "/y", "READDOD_CRASH_AT": "", "HOME": "/"}
    assert config.apply_env(config.Config(), env) == (config.Config(), [])


def test_the_api_key_variable_is_not_an_override() -> None:
    if "api_key_env" not in {f.name for f in msgspec.structs.fields(config.AIConfig)}:
        pytest.skip("ai.api_key_env not in this build")
    cfg = config.parse(b'[ai]\napi_key_env = "READDOD_AI_KEY"\n')
    assert config.apply_env(cfg, {"READDOD_AI_KEY": "sk-secret"})[0] == cfg
    with pytest.raises(ConfigError, match="READDOD_AI_KEY"):
        config.apply_env(config.Config(), {"READDOD_AI_KEY": "sk-secret"})


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("READDOD_")}
    return subprocess.run(
        [sys.executable, "-m", "readdod", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**base, **env},
    )


def test_config_command_shows_the_effective_config_redacted(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[daemon]\nconcurrency = 5\n[ai]\nbase_url = "https://bob:hunter2pass@127.0.0.1:9/v1"\n'
    )
    env = {"READDOD_CONFIG": str(path), "READDOD_DAEMON_BATCH_SIZE": "9"}
    out = _cli("config", "--json", env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["file"] == str(path)
    assert doc["overrides"] == ["READDOD_DAEMON_BATCH_SIZE"]
    assert doc["config"]["daemon"]["concurrency"] == 5
    assert doc["config"]["daemon"]["batch_size"] == 9
    assert doc["config"]["log"]["format"] == "json"
    assert "hunter2pass" not in out.stdout and "bob:[redacted]@" in out.stdout
    assert set(doc["config"]) == {f.name for f in msgspec.structs.fields(config.Config)}

    human = _cli("config", env=env)
    assert human.returncode == 0, human.stderr
    assert str(path) in human.stdout and "READDOD_DAEMON_BATCH_SIZE" in human.stdout
    assert "batch_size = 9" in human.stdout and "hunter2pass" not in human.stdout
    # The human form is TOML: it parses back to the same values (None keys are comments).
    shown = msgspec.toml.decode(human.stdout.replace("[redacted]", "x"))
    assert shown["daemon"]["batch_size"] == 9


def test_redaction_blanks_secret_named_values() -> None:
    out = config.redacted(config.Config())
    for values in out.values():
        for key, value in values.items():
            if key.endswith("_env"):
                assert value is None or value != config.REDACTED
    assert config._SECRET_KEY.search("api_key") and config._SECRET_KEY.search("auth_token")
    assert not config._SECRET_KEY.search("context_tokens")


def test_serve_refuses_a_bad_override_with_exit_2(tmp_path: Path) -> None:
    out = _cli(
        "serve",
        env={
            "READDOD_DAEMON_DATA_DIR": str(tmp_path),
            "READDOD_DAEMON_CONCURRENCY": "-4",
        },
    )
    assert out.returncode == 2
    assert "READDOD_DAEMON_CONCURRENCY" in out.stderr


def test_every_section_is_frozen_and_strict() -> None:
    def walk(cls: type[msgspec.Struct], where: str) -> None:
        cfg = cls.__struct_config__
        assert cfg.frozen and cfg.forbid_unknown_fields, where
        for field in msgspec.structs.fields(cls):
            info = msgspec.inspect.type_info(field.type)
            if isinstance(info, msgspec.inspect.StructType):
                walk(info.cls, f"{where}.{field.name}")

    walk(config.Config, "config")
    sections = {f.name for f in msgspec.structs.fields(config.Config)}
    assert {"daemon", "control", "fetch", "ai", "export", "log"} <= sections


def test_a_reader_that_goes_away_ends_the_output_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `readdod config | head -0`: nobody will read
    try:
        out = subprocess.run(
            [sys.executable, "-m", "readdod", "config"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("READDOD_")},
        )
    finally:
        os.close(write_end)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


def test_redaction_covers_keys_in_query_strings_and_headers() -> None:
    cfg = config.parse(
        b'[ai]\nbase_url = "https://127.0.0.1:9/v1?api_key=sk-abcdefgh12345"\n'
        b'[fetch]\nuser_agent = "probe Bearer tok3n-value"\n'
    )
    shown = config.redacted(cfg)
    assert shown["ai"]["base_url"] == "https://127.0.0.1:9/v1?api_key=[redacted]"
    assert shown["fetch"]["user_agent"] == "probe Bearer [redacted]"
    assert "sk-abcdefgh12345" not in json.dumps(shown) and "tok3n-value" not in json.dumps(shown)
