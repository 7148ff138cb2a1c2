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


#: The last second :func:`iso` formatted, and its text (most calls fall in the same one).
_second: tuple[int, str] = (0, "1970-01-01T00:00:00")


def iso(ms: int | None) -> str | None:
    """RFC 3339 UTC with milliseconds, or None."""
    global _second
    if ms is None:
        return None
    whole, milli = divmod(ms, 1000)
    second = _second
    if second[0] != whole:
        stamp = dt.datetime.fromtimestamp(whole, tz=dt.UTC).isoformat(timespec="seconds")
        second = _second = (whole, stamp[:-6])
    return f"{second[1]}.{milli:03d}Z"
