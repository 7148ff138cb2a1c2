"""Heartbeats: one transaction renews every lease the supervisor holds.

Every third of the lease's time to live, the leases of the running actors
are renewed in one write (a statement per 500); an actor whose lease was
lost (it expired and another worker took the item) is stopped. The same
beat returns items whose lease ran out, a dead or stalled worker's, to
QUEUED.
"""

from __future__ import annotations

from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from readdod.core.leases import Leases
from readdod.errors import ReaddodError
from readdod.metrics.meter import Meter
from readdod.runtime.logging import get_logger

log = get_logger("readdod.supervisor")


class Holder(Protocol):
    """Who holds the leases: the supervisor."""

    owner: str
    lease_ttl_ms: int

    def held(self) -> list[str]:
        """The items whose actors run now."""
        ...

    def lost(self, item_id: str) -> bool:
        """Stop the actor of ``item_id``, its lease gone; False if none runs."""
        ...

    def wake(self) -> None:
        """There may be work to claim."""
        ...


class Heartbeat:
    def __init__(self, leases: Leases, holder: Holder, meter: Meter | None = None) -> None:
        self.leases = leases
        self.holder = holder
        self.meter = meter or Meter()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        interval = self.holder.lease_ttl_ms / 3000
        task_status.started()
        while True:
            await anyio.sleep(interval)
            try:
                await self.beat()
            except ReaddodError as exc:
                log.warning("heartbeat.failed", error_code=exc.error_code, error=exc.message)

    async def beat(self) -> None:
        holder = self.holder
        held = holder.held()
        if held:
            renewed = await self.leases.renew(holder.owner, held, holder.lease_ttl_ms)
            self.meter.renewed(len(renewed))
            for item_id in set(held) - renewed:
                if holder.lost(item_id):
                    self.meter.lost(1)
                    log.warning("lease.lost", item_id=item_id, worker_id=holder.owner)
        if await self.leases.requeue_expired():
            holder.wake()
