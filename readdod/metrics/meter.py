"""What one daemon counts while it runs: claims, lease renewals and losses, step times.

Pure: the core tells the meter what each commit did (its notes) and the
heartbeat what it renewed; the exposition reads the totals. Counts live in
memory and start at zero with the process, as Prometheus counters do.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol

#: Upper bounds (seconds) of the step-duration buckets: fetches and local steps take
#: milliseconds, a model's answer seconds to minutes.
STEP_BUCKETS_S: Final = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)


class NoteLike(Protocol):
    """A committed note (:class:`readdod.core.unit.Note`)."""

    @property
    def event(self) -> str: ...

    @property
    def fields(self) -> Mapping[str, Any]: ...


class Histogram:
    """Counts per bucket (not cumulative), their sum and count."""

    __slots__ = ("bounds", "count", "counts", "total")

    def __init__(self, bounds: tuple[float, ...] = STEP_BUCKETS_S) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.total += value

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), ending with +Inf."""
        out: list[tuple[float, int]] = []
        running = 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out


class Meter:
    """One daemon's counters since it started."""

    def __init__(self) -> None:
        self.claims = 0
        self.lease_renewals = 0
        self.lease_losses = 0
        #: Writes refused because the lease had gone to another claim (fencing at work).
        self.fenced_writes = 0
        self.steps: dict[str, Histogram] = {}

    def renewed(self, count: int) -> None:
        self.lease_renewals += count

    def lost(self, count: int) -> None:
        self.lease_losses += count

    def step(self, step: str, seconds: float) -> None:
        hist = self.steps.get(step)
        if hist is None:
            hist = self.steps[step] = Histogram()
        hist.observe(max(0.0, seconds))

    def committed(self, notes: Iterable[NoteLike]) -> None:
        """Count what a commit noted (the core calls this after each commit)."""
        for note in notes:
            self.observe(note.event, note.fields)

    def observe(self, event: str, fields: Mapping[str, Any]) -> None:
        """Count what one committed note says (the core calls this after each commit)."""
        if event == "item.transition":
            if fields.get("to") == "PROCESSING":
                self.claims += 1
        elif event == "step.finished":
            ms = fields.get("duration_ms")
            if isinstance(ms, int | float) and isinstance(fields.get("step"), str):
                self.step(fields["step"], ms / 1000)
        elif event == "lease.lost":
            self.fenced_writes += 1
