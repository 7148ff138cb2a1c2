"""What the core asks of whoever runs the actors (the supervisor).

The core records; the workers act. A capture may start at once in a slot
the workers hold for it; an ``archive --cancel`` stops the run's actor; a
pause stops every actor. The composition root attaches the supervisor to
the core, so neither the control server nor the supervisor coordinates the
two by hand.
"""

from __future__ import annotations

from typing import Final, Protocol

import msgspec

from readdod.store import ArtifactRow, ItemRow

#: Captured sources up to this size travel with the claim (no read per item); bigger ones
#: are read by the actor when it needs them, so thousands in flight stay small in memory.
CLAIM_SOURCE_MAX_CHARS: Final = 64 * 1024


class Lease(msgspec.Struct, frozen=True):
    """What an actor holds: the right to write for one run of one item."""

    item_id: str
    owner: str
    run_id: str
    #: The fencing token of the claim (the item's ``lease_token``): every write under
    #: this lease carries it, and is refused once the item was claimed again.
    token: int | None = None


class Claimed(msgspec.Struct, frozen=True):
    """A claimed item as an actor needs it."""

    lease: Lease
    item: ItemRow
    run_mode: str
    refetch: bool
    done: dict[str, ArtifactRow]
    #: The captured (html, text, document), read with the claim when small; None: read
    #: it when needed.
    source: tuple[str | None, str | None, str | None] | None = None


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
