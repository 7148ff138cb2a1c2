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


#: The last second :func:`utc_second` formatted, and its text.
_second: tuple[int, str] = (0, "1970-01-01T00:00:00")


def utc_second(whole: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` (UTC) of a Unix time in seconds.

    The last second's text is kept: timestamps come many to a second (each
    log line, each event), and formatting a date is most of their cost.
    """
    global _second
    second = _second
    if second[0] != whole:
        text = dt.datetime.fromtimestamp(whole, tz=dt.UTC).isoformat(timespec="seconds")
        second = _second = (whole, text[:-6])
    return second[1]


def iso(ms: int | None) -> str | None:
    """RFC 3339 UTC with milliseconds, or None."""
    if ms is None:
        return None
    whole, milli = divmod(ms, 1000)
    return f"{utc_second(whole)}.{milli:03d}Z"
