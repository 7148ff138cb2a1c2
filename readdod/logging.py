"""structlog set up for JSON lines (journald-friendly) with the §8 fields."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import msgspec
import structlog

_encoder = msgspec.json.Encoder()


def _serialize(obj: Any, **_: Any) -> str:
    return _encoder.encode(obj).decode()


def _to_str(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in event.items():
        if isinstance(value, BaseException):
            event[key] = f"{type(value).__name__}: {value}"
    return event


def configure(level: str = "info", stream: TextIO | None = None) -> None:
    """One JSON object per line: ts (RFC 3339 UTC), level, event, then fields."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
            structlog.processors.format_exc_info,
            _to_str,
            structlog.processors.JSONRenderer(serializer=_serialize),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.WriteLoggerFactory(file=stream or sys.stdout),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(logger_name=name)
    return logger
