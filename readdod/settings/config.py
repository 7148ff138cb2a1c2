"""Configuration: frozen Structs, file lookup, defaults.

Every key has a default, so no file is needed. Unknown keys and bad values
fail at load with a message naming the key and the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import msgspec

from readdod.errors import ConfigError
from readdod.export import naming
from readdod.runtime.dsn import redact as redact_dsn
from readdod.runtime.logging import scrub_text
from readdod.settings import listen as address

Positive = Annotated[int, msgspec.Meta(ge=1)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Ratio = Annotated[float, msgspec.Meta(ge=0, le=1)]
Days = Annotated[float, msgspec.Meta(ge=0)]


#: The most items one claim takes (the workflow standard's BATCH_SIZE).
MAX_BATCH_SIZE: Final = 20


class DaemonConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    data_dir: str | None = None
    concurrency: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 8
    #: Items claimed at a time, at most MAX_BATCH_SIZE (the workflow standard's batch).
    batch_size: Annotated[int, msgspec.Meta(ge=1)] = 20
    shutdown_grace_s: Annotated[float, msgspec.Meta(ge=0)] = 10.0
    max_orphanings: Positive = 3
    auto_process: bool = True
    #: Export an item as soon as its run makes it READY (export.format, export.dir).
    auto_export: bool = False
    lease_ttl_s: Seconds = 30.0
    claim_interval_s: Seconds = 5.0
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    # Health thresholds (Cecelia §7): degraded from the first limit, unhealthy past the second.
    health_success_rate_degraded: Ratio = 0.95
    health_success_rate_unhealthy: Ratio = 0.80
    health_min_runs: Positive = 5
    health_avg_run_s_degraded: Seconds = 300.0
    health_avg_run_s_unhealthy: Seconds = 900.0
    health_backlog_degraded: NonNegative = 10
    health_backlog_unhealthy: NonNegative = 50
    health_oldest_queued_s_degraded: Seconds = 3600.0
    health_oldest_queued_s_unhealthy: Seconds = 21600.0
    health_failed_items_degraded: NonNegative = 3
    health_failed_items_unhealthy: NonNegative = 10
    health_failures_24h_degraded: NonNegative = 5
    health_failures_24h_unhealthy: NonNegative = 20
    #: READY items scored below this are archived with SYSTEM_SKIP; 0 turns it off.
    skip_below: Annotated[int, msgspec.Meta(ge=0, le=101)] = 40

    def __post_init__(self) -> None:
        if self.batch_size > MAX_BATCH_SIZE:
            raise ValueError(
                f"batch_size is {self.batch_size}, above {MAX_BATCH_SIZE}, the most items one"
                f" claim may take; the supervisor claims again until daemon.concurrency items"
                f" run, so set batch_size to {MAX_BATCH_SIZE} or less and raise concurrency"
                f" to run more at once"
            )


class ControlConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    socket: str | None = None
    group: str | None = None
    allowed_uids: list[Annotated[int, msgspec.Meta(ge=0)]] = []
    max_connections: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 128
    idle_timeout_s: Seconds = 300.0
    #: A request line begun must be finished within this; else the connection is closed.
    read_timeout_s: Seconds = 10.0
    send_timeout_s: Seconds = 10.0
    watch_buffer: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] = 1000


class FetchConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    max_bytes: Positive = 10 * 1024 * 1024
    max_redirects: Annotated[int, msgspec.Meta(ge=0, le=50)] = 5
    timeout_s: Seconds = 30.0
    connect_timeout_s: Seconds = 10.0
    read_timeout_s: Seconds = 15.0
    user_agent: str = "readdod/0.1"
    per_host_limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 2
    allow_private: bool = False
    allow_networks: list[str] = []
    attempts: Annotated[int, msgspec.Meta(ge=1, le=20)] = 3
    retry_initial_s: Seconds = 1.0
    retry_max_s: Seconds = 30.0
    #: CPU seconds and memory one PDF may take to read (its own process is stopped there).
    pdf_cpu_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 30.0
    pdf_memory_mb: Annotated[int, msgspec.Meta(ge=128, le=65536)] = 1024


AnswerLimit = Annotated[int, msgspec.Meta(ge=16, le=100_000)]


class AnswerTokens(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``[ai.max_tokens]``: the longest answer of each step, so no answer runs to the end
    of the server's context."""

    summary: AnswerLimit = 900
    summary_chunk: AnswerLimit = 700
    score: AnswerLimit = 700
    todos: AnswerLimit = 900
    card_text: AnswerLimit = 250


class AIConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    engine: Literal["local", "fixed", "openai"] = "local"
    fixed_delay_ms: Annotated[int, msgspec.Meta(ge=0, le=600_000)] = 0
    # engine = "openai": any OpenAI-compatible chat-completions server.
    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = "llama3.1:8b"
    model_summary: str | None = None
    model_score: str | None = None
    model_todos: str | None = None
    model_card: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    profile: Literal["default", "research"] = "default"
    #: ``auto`` learns what the server accepts (json_schema, then json_object with the
    #: schema, then json_object, then the schema in the prompt only) and remembers it.
    structured_output: Literal[
        "auto", "json_schema", "json_object_schema", "json_object", "prompt"
    ] = "auto"
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] = 0.2
    timeout_s: Seconds = 120.0
    attempts: Annotated[int, msgspec.Meta(ge=1, le=20)] = 4
    retry_initial_s: Annotated[float, msgspec.Meta(ge=0)] = 1.0
    retry_max_s: Annotated[float, msgspec.Meta(ge=0)] = 30.0
    concurrency: Annotated[int, msgspec.Meta(ge=1, le=1_000)] = 4
    rpm: Annotated[int, msgspec.Meta(ge=0)] = 0
    tpm: Annotated[int, msgspec.Meta(ge=0)] = 0
    circuit_failures: Annotated[int, msgspec.Meta(ge=0, le=20)] = 3
    circuit_probe_s: Seconds = 15.0
    context_tokens: Annotated[int, msgspec.Meta(ge=1_024)] = 8_192
    #: The most tokens each step's answer may take (``max_tokens`` of its requests).
    max_tokens: AnswerTokens = msgspec.field(default_factory=lambda: AnswerTokens())


class RetryRule(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How often one failure class is re-queued, and after how long.

    ``delays_s[i]`` is the wait before retry ``i + 1``; the last one repeats.
    """

    attempts: Annotated[int, msgspec.Meta(ge=0, le=100)]
    delays_s: tuple[Annotated[float, msgspec.Meta(ge=0)], ...] = ()


class RetryConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Automatic retries across runs (DESIGN §5.2), per failure class."""

    network: RetryRule = RetryRule(attempts=3, delays_s=(30.0, 60.0, 120.0))
    timeout: RetryRule = RetryRule(attempts=1, delays_s=(300.0,))
    #: A provider's Retry-After wins over these delays.
    rate_limit: RetryRule = RetryRule(attempts=3, delays_s=(60.0,))
    provider: RetryRule = RetryRule(attempts=3, delays_s=(30.0, 60.0, 120.0))
    schema: RetryRule = RetryRule(attempts=0)
    #: An item failed WORKER_LOST (its worker died ``max_orphanings`` times in a row with
    #: no progress) is queued again once the daemon has run this long since its start
    #: and since the failure: a clean run says the crashes were not this item's doing.
    worker_lost: RetryRule = RetryRule(attempts=1, delays_s=(600.0,))


class ExportConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    dir: str | None = None
    filename: str = naming.DEFAULT_PATTERN
    format: Literal["markdown", "json"] = "markdown"

    def __post_init__(self) -> None:
        problem = naming.check_pattern(self.filename)
        if problem is not None:
            raise ValueError(f"filename {problem}")


class RetentionConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """What the daily prune removes of every item's history (Cecelia §6, docs/retention.md)."""

    enabled: bool = True
    finished_days: Days = 30.0
    cancelled_days: Days = 7.0
    failed_days: Days = 14.0
    keep_versions: NonNegative = 2
    interval_h: Annotated[float, msgspec.Meta(gt=0)] = 24.0


class LogConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    level: Literal["debug", "info", "warning", "error"] = "info"
    file: str | None = None
    format: Literal["json", "console"] = "json"


class FeedsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """How the daemon polls the feeds of ``readdod feed add``."""

    #: Seconds between two polls of a feed that answers.
    interval_s: Annotated[float, msgspec.Meta(ge=1)] = 1800.0
    #: A failing feed waits interval_s × 2^(failures-1), at most this long.
    max_backoff_s: Annotated[float, msgspec.Meta(ge=1)] = 86_400.0
    #: New entries captured from one poll at most (the newest first); the rest wait.
    max_entries_per_poll: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 100
    #: Feeds polled at the same time.
    concurrency: Annotated[int, msgspec.Meta(ge=1, le=100)] = 4
    #: The largest feed document fetched (at most ``fetch.max_bytes``); a larger one fails
    #: its poll with EXTRACTION_TOO_LARGE.
    max_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 10 * 1024 * 1024
    #: Entries read from one document, the first in its order (feeds list the newest
    #: first); the entries after them are cut out of the bytes before they are parsed.
    max_entries_read: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 500
    #: CPU seconds reading one document may take (a child process, stopped there).
    parse_cpu_s: Annotated[float, msgspec.Meta(ge=1)] = 10.0
    #: Memory the process reading one document may map, in MiB.
    parse_memory_mb: Annotated[int, msgspec.Meta(ge=128)] = 512
    #: Consecutive failed polls from which `health` is degraded.
    failures_degraded: Annotated[int, msgspec.Meta(ge=1)] = 3


class MetricsConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """OpenMetrics over HTTP; the ``metrics`` socket method needs no config."""

    #: ``host:port`` to serve ``GET /metrics`` on; unset, no HTTP endpoint.
    listen: str | None = None
    #: Let ``listen`` be an address other machines can reach.
    allow_remote: bool = False

    def __post_init__(self) -> None:
        if self.listen is not None:
            try:
                address.check(self.listen, allow_remote=self.allow_remote)
            except ValueError as exc:
                raise ValueError(f"listen {exc}") from None


class StoreConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where items live: a SQLite file in ``data_dir`` (one daemon), or a PostgreSQL
    database several daemons share (``backend = "postgresql"`` and ``dsn``)."""

    backend: Literal["sqlite", "postgresql"] = "sqlite"
    #: A libpq connection string or URI (``host=db.example port=5432 dbname=readdod
    #: user=readdod``); libpq's PG* variables and ~/.pgpass apply as usual.
    dsn: str | None = None
    #: The variable holding the password, else the systemd credential of that name.
    password_env: str = "READDOD_DB_PASSWORD"
    #: Connections this daemon keeps to PostgreSQL.
    pool_size: Annotated[int, msgspec.Meta(ge=2, le=1_000)] = 8

    def __post_init__(self) -> None:
        if self.backend == "postgresql" and not self.dsn:
            raise ValueError(
                '"postgresql" needs store.dsn, the database to connect to'
                ' (e.g. "host=db.example dbname=readdod user=readdod")'
            )


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    daemon: DaemonConfig = DaemonConfig()
    control: ControlConfig = ControlConfig()
    fetch: FetchConfig = FetchConfig()
    ai: AIConfig = AIConfig()
    retry: RetryConfig = RetryConfig()
    export: ExportConfig = ExportConfig()
    retention: RetentionConfig = RetentionConfig()
    log: LogConfig = LogConfig()
    feeds: FeedsConfig = FeedsConfig()
    metrics: MetricsConfig = MetricsConfig()
    store: StoreConfig = StoreConfig()


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


def load(
    explicit: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Config, Path | None]:
    """The effective config: the file (if any), then ``READDOD_<SECTION>_<KEY>`` overrides."""
    cfg, path, _ = load_with_overrides(explicit, environ)
    return cfg, path


def load_with_overrides(
    explicit: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Config, Path | None, list[str]]:
    """Like :func:`load`, also naming the environment variables that were applied."""
    path = config_path(explicit)
    cfg = Config()
    if path is not None:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        cfg = parse(raw, str(path))
    cfg, applied = apply_env(cfg, os.environ if environ is None else environ)
    return cfg, path, applied


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


def read_secret(env_name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A secret from ``$<env_name>``, else from ``$CREDENTIALS_DIRECTORY/<env_name>`` (a
    systemd credential, ``LoadCredential=``); None when neither holds one."""
    env = os.environ if environ is None else environ
    value = env.get(env_name, "").strip()
    if value:
        return value
    creds = env.get("CREDENTIALS_DIRECTORY")
    if not creds:
        return None
    try:
        value = (Path(creds) / env_name).read_text("utf-8").strip()
    except OSError:
        return None
    return value or None


def export_dir(cfg: Config) -> Path:
    if cfg.export.dir:
        return Path(cfg.export.dir).expanduser()
    return data_dir(cfg) / "exports"


# --- environment overrides ----------------------------------------------------

ENV_PREFIX = "READDOD_"
_SECRET_KEY = re.compile(
    r"(^|_)(api_?key|token|password|passwd|secret|credentials?|authorization)($|_)", re.I
)
REDACTED = "[redacted]"


def _is_list(tp: Any) -> bool:
    info = msgspec.inspect.type_info(tp)
    if isinstance(info, msgspec.inspect.UnionType):
        return any(isinstance(t, msgspec.inspect.ListType) for t in info.types)
    return isinstance(info, msgspec.inspect.ListType)


def _is_str(tp: Any) -> bool:
    info = msgspec.inspect.type_info(tp)
    if isinstance(info, msgspec.inspect.UnionType):
        return any(isinstance(t, msgspec.inspect.StrType) for t in info.types)
    return isinstance(info, msgspec.inspect.StrType)


def _allows_none(tp: Any) -> bool:
    info = msgspec.inspect.type_info(tp)
    return isinstance(info, msgspec.inspect.UnionType) and any(
        isinstance(t, msgspec.inspect.NoneType) for t in info.types
    )


def _env_value(name: str, raw: str, tp: Any) -> Any:
    """Convert one variable's text to the field's type; errors name the variable."""
    value: Any = raw
    if raw == "" and _allows_none(tp):
        return None
    if raw.lstrip().startswith(("{", "[")) and not _is_str(tp):
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise ConfigError(f"environment variable {name}: not valid JSON ({exc})") from exc
    elif _is_list(tp):
        value = [part.strip() for part in raw.split(",") if part.strip()]
    try:
        return msgspec.convert(value, tp, strict=False)
    except msgspec.ValidationError as exc:
        shown = REDACTED if _SECRET_KEY.search(name) else repr(raw)
        raise ConfigError(f"environment variable {name}={shown}: {exc}") from exc


def _exempt_names(cfg: Config) -> set[str]:
    """Variables the config names as secret holders (e.g. ``ai.api_key_env``) are not overrides."""
    names = set()
    for section in msgspec.structs.fields(Config):
        values = getattr(cfg, section.name)
        for field in msgspec.structs.fields(type(values)):
            value = getattr(values, field.name)
            if field.name.endswith("_env") and isinstance(value, str):
                names.add(value)
    return names


def apply_env(cfg: Config, environ: Mapping[str, str]) -> tuple[Config, list[str]]:
    """Apply ``READDOD_<SECTION>_<KEY>`` variables on top of ``cfg``.

    A variable whose first word is not a section (``READDOD_CONFIG``,
    ``READDOD_SOCKET``) is not an override; one naming a section and an unknown
    key, or holding a bad value, is an error that names the variable.
    """
    sections = {f.name: f.type for f in msgspec.structs.fields(Config)}
    exempt = _exempt_names(cfg)
    updates: dict[str, dict[str, Any]] = {}
    applied: list[str] = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in exempt:
            continue
        section, _, key = name[len(ENV_PREFIX) :].partition("_")
        section = section.lower()
        if section not in sections:
            continue
        fields = {f.name: f.type for f in msgspec.structs.fields(sections[section])}
        key = key.lower()
        if key not in fields:
            known = ", ".join(f"{ENV_PREFIX}{section.upper()}_{k.upper()}" for k in fields)
            raise ConfigError(
                f"environment variable {name}: [{section}] has no key {key!r}; known: {known}"
            )
        updates.setdefault(section, {})[key] = _env_value(name, environ[name], fields[key])
        applied.append(name)
    if not updates:
        return cfg, applied
    merged = msgspec.to_builtins(cfg)
    for section, values in updates.items():
        merged[section].update(msgspec.to_builtins(values))
    try:
        return msgspec.convert(merged, Config), applied
    except msgspec.ValidationError as exc:
        raise ConfigError(
            f"environment overrides {', '.join(applied)}: {_readable(str(exc))}"
        ) from exc


def _redact_url(value: str) -> str:
    """Passwords and keys inside a value (``user:pw@``, ``?api_key=``, ``Bearer ...``)."""
    return scrub_text(value)


def redacted(cfg: Config) -> dict[str, Any]:
    """The config as plain data with anything secret-looking blanked.

    The API key never lives in the config (only the variable that holds it,
    ``*_env``), but a secret pasted into a field must not reach a terminal.
    """
    out: dict[str, Any] = msgspec.to_builtins(cfg)
    for values in out.values():
        for key, value in list(values.items()):
            if value is None:
                continue
            if _SECRET_KEY.search(key) and not key.endswith("_env"):
                values[key] = REDACTED
            elif key == "dsn" and isinstance(value, str):
                # Every libpq secret (sslpassword too), in either form of the string.
                values[key] = _redact_url(redact_dsn(value))
            elif isinstance(value, str):
                values[key] = _redact_url(value)
    return out
