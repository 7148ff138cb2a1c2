"""Presence: this daemon's row in the fleet's registry, kept fresh while it runs.

The daemon joins before it claims anything; this loop beats every third of
the lease TTL (as the lease heartbeat does) with how many items it processes
and whether it is paused, and takes the row out at a clean stop. A daemon
killed without one stays listed, not alive, until the others forget it.
"""

from __future__ import annotations

from typing import Final, Protocol

import anyio
from anyio.abc import TaskStatus

from readdod.core.fleet import Fleet
from readdod.errors import ReaddodError
from readdod.runtime.logging import get_logger

log = get_logger("readdod.fleet")

#: How long a clean stop may spend taking the row out.
LEAVE_TIMEOUT_S: Final = 5.0


class Load(Protocol):
    """What the registry says of this daemon (the supervisor)."""

    paused: bool

    @property
    def in_flight(self) -> int: ...

    def cleanup_s(self, default_s: float) -> float: ...


class Presence:
    def __init__(self, fleet: Fleet, load: Load) -> None:
        self.fleet = fleet
        self.load = load

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            while True:
                await anyio.sleep(self.fleet.beat_ms / 1000)
                try:
                    await self.fleet.beat(in_flight=self.load.in_flight, paused=self.load.paused)
                except ReaddodError as exc:
                    log.warning("fleet.beat_failed", error_code=exc.error_code, error=exc.message)
        finally:
            with anyio.move_on_after(self.load.cleanup_s(LEAVE_TIMEOUT_S), shield=True):
                try:
                    await self.fleet.leave()
                except ReaddodError as exc:
                    log.warning("fleet.leave_failed", error_code=exc.error_code, error=exc.message)
