"""Time, injectable.

Everything that compares times (leases, retries, health windows) asks a
:class:`Clock` rather than the system, so tests can move time by hand.
Stored times are integer milliseconds since the epoch.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> None:
        self._now += ms


def iso(ms: int | None) -> str | None:
    """RFC 3339 UTC with milliseconds, or None."""
    if ms is None:
        return None
    stamp = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
