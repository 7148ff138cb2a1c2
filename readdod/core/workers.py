"""What the core asks of whoever runs the actors (the supervisor).

The core records; the workers act. A capture may start at once: it commits
with the workers' own claim of a free slot; an ``archive --cancel`` stops the
run's actor; a pause stops every actor. The composition root attaches the
supervisor to the core, so neither the control server nor the supervisor
coordinates the two by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from readdod.core.leases import Claimed
from readdod.core.unit import Work

T = TypeVar("T")


class Workers(Protocol):
    """The actors' side of the core's commands."""

    def wake(self) -> None:
        """Work was queued: claim it."""
        ...

    async def claim_with(self, first: Callable[[Work], T]) -> tuple[T, list[Claimed]]:
        """Commit ``first`` (a capture) with the workers' claim of a free slot in the same
        transaction, and start what it claimed at once; with no free slot, ``first``
        alone. What ``first`` returned, and what was claimed."""
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
