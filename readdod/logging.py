"""structlog set up for JSON lines (journald-friendly) with the §8 fields."""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, TextIO, cast

import msgspec
import structlog

_encoder = msgspec.json.Encoder()
REDACTED = "[redacted]"

_SECRET_NAME = re.compile(
    r"(^|_)(api_?key|token|password|passwd|secret|credentials?|authorization|cookie)($|_)", re.I
)
_SECRET_PATTERNS = [
    # user:password@ in URLs
    (re.compile(r"(://[^/@:\s]+:)[^/@\s]+@"), rf"\g<1>{REDACTED}@"),
    # credentials in query strings
    (
        re.compile(
            r"([?&](?:access_token|token|api_key|apikey|key|secret|password|sig|signature)=)[^&#\s]+",
            re.I,
        ),
        rf"\g<1>{REDACTED}",
    ),
    # header-looking text: "Authorization: Bearer x", "Bearer x", "Basic x"
    (
        re.compile(
            r"(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',}]+",
            re.I,
        ),
        rf"\g<1>{REDACTED}",
    ),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+"), rf"\g<1> {REDACTED}"),
    # OpenAI-style keys
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
]
_secrets: set[str] = set()
_sink: LogSink | None = None


def add_secret(value: str | None) -> None:
    """Never let ``value`` (an API key read at startup) reach a log line verbatim."""
    if value and len(value) >= 4:
        _secrets.add(value)


# What one of the patterns above needs somewhere in the text; most values have none
# of it, and plain substring tests are far cheaper than the patterns (every line pays).
def _maybe_secret(text: str) -> bool:
    if "://" in text or "?" in text or "&" in text or "sk-" in text:
        return True
    lower = text.lower()
    return "authoriz" in lower or "bearer" in lower or "basic" in lower


# Fields readdod itself fills with known-safe values.
_SAFE_KEYS = frozenset({"ts", "level", "event", "logger_name"})


def _scrub_text(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if not _maybe_secret(text):
        return text
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
    return text


def scrub_text(text: str) -> str:
    """``text`` with anything secret-looking replaced, as the logs show it."""
    return _scrub_text(text)


@functools.lru_cache(maxsize=1024)
def _secret_name(key: str) -> bool:
    return key != "event" and _SECRET_NAME.search(key) is not None


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub_text(value)
    if isinstance(value, dict):
        return {
            k: REDACTED if _SECRET_NAME.search(str(k)) else _scrub_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_scrub_value(v) for v in value]
    return value


def scrub(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Blank secret-named fields and secret-looking text in every log line."""
    for key, value in event.items():
        if key in _SAFE_KEYS or value is None:
            continue
        if _secret_name(key):
            event[key] = REDACTED
        elif not isinstance(value, int | float):
            event[key] = _scrub_value(value)
    return event


class LogSink:
    """Where log lines go: a stream, or a file that can be reopened for logrotate."""

    def __init__(self, path: Path | None, stream: TextIO) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._owned = path is not None
        self._file: TextIO = self._open() if path is not None else stream

    def _open(self) -> TextIO:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path.open("a", buffering=1, encoding="utf-8")

    def write(self, text: str) -> int:
        with self._lock:
            return self._file.write(text)

    def flush(self) -> None:
        with self._lock:
            self._file.flush()

    def isatty(self) -> bool:
        return self._file.isatty()

    def reopen(self) -> str | None:
        if self.path is None:
            return None
        fresh = self._open()
        with self._lock:
            old, self._file = self._file, fresh
        old.close()
        return str(self.path)

    def close(self) -> None:
        if self._owned:
            with self._lock:
                self._file.close()


def _serialize(obj: Any, **_: Any) -> str:
    return _encoder.encode(obj).decode()


def _to_str(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in event.items():
        if isinstance(value, BaseException):
            event[key] = f"{type(value).__name__}: {value}"
    return event


def configure(
    level: str = "info",
    stream: TextIO | None = None,
    *,
    fmt: str = "json",
    file: str | Path | None = None,
) -> LogSink:
    """One JSON object per line: ts (RFC 3339 UTC), level, event, then fields.

    ``fmt="console"`` renders aligned lines for people instead. With ``file``
    the lines go to that file, reopened by :func:`reopen` (SIGHUP).
    """
    global _sink
    if _sink is not None:
        _sink.close()
    sink = LogSink(Path(file).expanduser() if file else None, stream or sys.stdout)
    _sink = sink
    renderer: structlog.typing.Processor
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(
            colors=sink.isatty(), timestamp_key="ts", sort_keys=False
        )
    else:
        renderer = structlog.processors.JSONRenderer(serializer=_serialize)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
            structlog.processors.format_exc_info,
            _to_str,
            scrub,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.WriteLoggerFactory(file=cast(TextIO, sink)),
        cache_logger_on_first_use=False,
    )
    return sink


def current_file() -> str | None:
    return str(_sink.path) if _sink is not None and _sink.path is not None else None


def reopen() -> str | None:
    """Reopen the log file (after logrotate renamed it); the path, or None for stdout."""
    return _sink.reopen() if _sink is not None else None


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(logger_name=name)
    return logger
