"""Automatic retries across runs: queue failed items again when they are due.

The core sets ``next_attempt_at`` on a retryable failure (per the
``[retry]`` policy). This loop sleeps until the soonest one is due, or until
the core says a new retry was scheduled, and then asks the core to queue
what is due. One query per due time, none in between:
no polling storm however many items wait.
"""

from __future__ import annotations

import anyio
from anyio.abc import TaskStatus

from readdod.core.commands import Commands
from readdod.errors import ReaddodError
from readdod.runtime.clock import Clock
from readdod.runtime.logging import get_logger

log = get_logger("readdod.scheduler")

#: The longest sleep: a safety net should a wake-up ever be missed.
MAX_SLEEP_S = 60.0
#: The shortest sleep after a pass that queued nothing, so a clock that
#: disagrees with the database cannot spin the loop.
MIN_SLEEP_S = 0.05
BATCH = 100


class RetryScheduler:
    def __init__(
        self, commands: Commands, clock: Clock, *, max_sleep_s: float = MAX_SLEEP_S
    ) -> None:
        self.commands = commands
        self.clock = clock
        self.max_sleep_s = max_sleep_s
        self.passes = 0
        #: When this daemon started: WORKER_LOST retries wait for a clean run from here.
        self.started_ms = clock.now_ms()
        self._wake = anyio.Event()
        commands.units.on_retry_scheduled(self.wake)

    def wake(self) -> None:
        self._wake.set()

    def sleep_for(self, next_due_ms: int | None) -> float:
        """Seconds until ``next_due_ms`` by the injected clock, bounded."""
        if next_due_ms is None:
            return self.max_sleep_s
        left = (next_due_ms - self.clock.now_ms()) / 1000
        return min(max(left, MIN_SLEEP_S), self.max_sleep_s)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._wake = anyio.Event()
            try:
                queued, next_due = await self.commands.requeue_due(
                    BATCH, clean_since=self.started_ms
                )
            except ReaddodError as exc:
                log.warning("retry.scan_failed", error_code=exc.error_code, error=exc.message)
                queued, next_due = [], None
            self.passes += 1
            if len(queued) >= BATCH:
                continue
            with anyio.move_on_after(self.sleep_for(next_due)):
                await self._wake.wait()
