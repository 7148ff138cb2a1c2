"""Configuration: frozen Structs, file lookup, defaults.

Every key has a default, so no file is needed. Unknown keys and bad values
fail at load with a message naming the key and the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from readdod.errors import ConfigError

Positive = Annotated[int, msgspec.Meta(ge=1)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]


class DaemonConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    data_dir: str | None = None
    concurrency: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 8
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 20
    shutdown_grace_s: Annotated[float, msgspec.Meta(ge=0)] = 10.0
    max_orphanings: Positive = 3
    auto_process: bool = True
    lease_ttl_s: Seconds = 30.0
    claim_interval_s: Seconds = 5.0
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"


class ControlConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    socket: str | None = None


class FetchConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    max_bytes: Positive = 10 * 1024 * 1024
    max_redirects: Annotated[int, msgspec.Meta(ge=0, le=50)] = 5
    timeout_s: Seconds = 30.0
    user_agent: str = "readdod/0.1"


class AIConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    engine: Literal["local", "fixed"] = "local"
    fixed_delay_ms: Annotated[int, msgspec.Meta(ge=0, le=600_000)] = 0


class ExportConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    dir: str | None = None


class LogConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    level: Literal["debug", "info", "warning", "error"] = "info"
    file: str | None = None


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    daemon: DaemonConfig = DaemonConfig()
    control: ControlConfig = ControlConfig()
    fetch: FetchConfig = FetchConfig()
    ai: AIConfig = AIConfig()
    export: ExportConfig = ExportConfig()
    log: LogConfig = LogConfig()


def config_path(explicit: str | None) -> Path | None:
    """The config file to read, in DESIGN §8 order; None when there is none."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("READDOD_CONFIG")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    for candidate in (Path(xdg) / "readdod" / "config.toml", Path("/etc/readdod/config.toml")):
        if candidate.is_file():
            return candidate
    return None


def load(explicit: str | None = None) -> tuple[Config, Path | None]:
    path = config_path(explicit)
    if path is None:
        return Config(), None
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    return parse(raw, str(path)), path


def parse(raw: bytes | str, origin: str = "<config>") -> Config:
    try:
        return msgspec.toml.decode(raw, type=Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{origin}: {_readable(str(exc))}") from exc
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{origin}: not valid TOML ({exc})") from exc


def _readable(msg: str) -> str:
    """Turn msgspec's ``- at `$.daemon.x``` into a dotted key people know."""
    head, sep, where = msg.partition(" - at `$.")
    if not sep:
        return msg
    return f"{where.rstrip('`')}: {head}"


def data_dir(cfg: Config) -> Path:
    if cfg.daemon.data_dir:
        return Path(cfg.daemon.data_dir).expanduser()
    state = os.environ.get("STATE_DIRECTORY")
    if state:
        return Path(state.split(":")[0])
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "readdod"


def socket_path(cfg: Config | None, explicit: str | None = None) -> Path:
    """Where the control socket lives (DESIGN §6 order)."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("READDOD_SOCKET")
    if env:
        return Path(env)
    if cfg is not None and cfg.control.socket:
        return Path(cfg.control.socket).expanduser()
    runtime = os.environ.get("RUNTIME_DIRECTORY")
    if runtime:
        return Path(runtime.split(":")[0]) / "readdod.sock"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "readdod" / "readdod.sock"
    return Path(f"/tmp/readdod-{os.getuid()}") / "readdod.sock"


def export_dir(cfg: Config) -> Path:
    if cfg.export.dir:
        return Path(cfg.export.dir).expanduser()
    return data_dir(cfg) / "exports"
