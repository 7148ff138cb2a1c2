"""Config: defaults, the example file, and errors that name the key."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from readdod.errors import ConfigError
from readdod.settings import config

EXAMPLE = Path(__file__).parent.parent / "config" / "readdod.example.toml"


def test_example_parses_to_the_defaults() -> None:
    assert config.parse(EXAMPLE.read_bytes(), str(EXAMPLE)) == config.Config()


def test_example_documents_every_key() -> None:
    text = EXAMPLE.read_text()
    sections = re.split(r"^\[(\w+)\]$", text, flags=re.M)
    found = {sections[i]: sections[i + 1] for i in range(1, len(sections), 2)}
    for name, field_type in [(f.name, f.type) for f in msgspec.structs.fields(config.Config)]:
        assert name in found, f"[{name}] missing from the example"
        for field in msgspec.structs.fields(field_type):
            assert re.search(rf"^#? ?{field.name} = ", found[name], flags=re.M), (
                f"{name}.{field.name} missing from the example"
            )


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (b"[daemon]\nconcurency = 3\n", "concurency"),
        (b"[daemon]\nconcurrency = 0\n", "daemon.concurrency"),
        (b"[daemon]\nconcurrency = 'many'\n", "daemon.concurrency"),
        (b"[nope]\nx = 1\n", "nope"),
        (b"[daemon\n", "not valid TOML"),
    ],
)
def test_bad_values_name_the_key_and_the_file(raw: bytes, needle: str) -> None:
    with pytest.raises(ConfigError) as exc:
        config.parse(raw, "/etc/readdod/config.toml")
    assert needle in str(exc.value) and "/etc/readdod/config.toml" in str(exc.value)


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = tmp_path / "env.toml"
    env_file.write_text("[daemon]\nconcurrency = 2\n")
    xdg = tmp_path / "xdg"
    (xdg / "readdod").mkdir(parents=True)
    (xdg / "readdod" / "config.toml").write_text("[daemon]\nconcurrency = 3\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.delenv("READDOD_CONFIG", raising=False)
    assert config.load()[0].daemon.concurrency == 3
    monkeypatch.setenv("READDOD_CONFIG", str(env_file))
    assert config.load()[0].daemon.concurrency == 2
    assert config.load(str(EXAMPLE))[0].daemon.concurrency == 8
    with pytest.raises(ConfigError, match="cannot read"):
        config.load(str(tmp_path / "missing.toml"))


def test_serve_refuses_a_bad_config_with_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "bad.toml"
    bad.write_text("[daemon]\nbatch_size = -1\n")
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "serve", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "daemon.batch_size" in out.stderr and str(bad) in out.stderr


def test_serve_refuses_a_batch_larger_than_the_workflow_standards_20(tmp_path: Path) -> None:
    import subprocess
    import sys

    big = tmp_path / "big.toml"
    big.write_text("[daemon]\nbatch_size = 10000\n")
    out = subprocess.run(
        [sys.executable, "-m", "readdod", "serve", "--config", str(big)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "batch_size is 10000, above 20" in out.stderr and str(big) in out.stderr
    assert "raise concurrency" in out.stderr
    assert config.parse("[daemon]\nbatch_size = 20\n").daemon.batch_size == 20
