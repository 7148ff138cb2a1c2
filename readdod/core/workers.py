"""What the core asks of whoever runs the actors (the supervisor).

The core records; the workers act. A capture may start at once in a slot
the workers hold for it; an ``archive --cancel`` stops the run's actor; a
pause stops every actor. The composition root attaches the supervisor to
the core, so neither the control server nor the supervisor coordinates the
two by hand.
"""

from __future__ import annotations

from typing import Protocol

from readdod.core.leases import Claimed


class Workers(Protocol):
    """The actors' side of the core's commands."""

    #: The worker id leases are taken for.
    owner: str
    lease_ttl_ms: int

    def wake(self) -> None:
        """Work was queued: claim it."""
        ...

    def reserve(self) -> bool:
        """Hold a free slot for a capture about to commit (it may be claimed in its own
        transaction); False when there is none."""
        ...

    def settle(self, claimed: Claimed | None) -> None:
        """Called once after the capture's commit with the item to start at once, or
        None to give the slot back."""
        ...

    def cancel(self, item_id: str) -> bool:
        """Stop the actor running ``item_id``; its lease is already gone."""
        ...

    async def pause(self) -> None:
        """Stop claiming and stop every actor; return once they gave their items back."""
        ...

    def set_paused(self, paused: bool) -> None:
        """Claim, or not, from now on."""
        ...
