"""Leases: the claim, its renewals, the writes it fences and the leases lost."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from readdod.store.rows import ItemRow


class LeaseQueries(Protocol):
    """Claims and leases: who works on a PROCESSING item, until when, and what
    becomes of it once the lease is lost."""

    def queue_due(self, now: int) -> bool:
        """Whether any QUEUED item is due (``next_attempt_at <= now``)."""
        ...

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Move up to ``limit`` due QUEUED items to PROCESSING under ``owner``'s lease,
        P0 first then oldest; the rows as they are now, in that order.

        Each claimed item's ``lease_token`` grows by one: the fence of this claim.
        Concurrent claims (several daemons) never take the same item."""
        ...

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        """Extend the leases ``owner`` still holds among ``item_ids``; the ids renewed."""
        ...

    def held_by(self, owner: str) -> list[ItemRow]:
        """The PROCESSING items whose lease ``owner`` holds."""
        ...

    def holds_lease(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None
    ) -> bool:
        """Whether ``owner`` still holds the item's lease for ``run_id``, from the claim
        that issued ``token`` (its ``lease_token``): once the item is claimed again, by
        anyone, the answer is False for good. None: any claim of that owner and run."""
        ...

    def update_fenced(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None, **fields: Any
    ) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id`` (from the
        claim that issued ``token``, as :meth:`holds_lease`); False, and nothing changed,
        once it does not."""
        ...

    def lost_leases(
        self, expired_before: int | None, *, at_least: int = 0, owned_by: str | None = None
    ) -> list[ItemRow]:
        """PROCESSING items whose lease ran out before ``expired_before`` (None: every
        lease with an expiry, for a daemon that holds the store alone), or whose owner's
        id starts with ``owned_by`` (an earlier life of a restarted daemon, dead for sure),
        lost ``at_least`` times in a row before, by id."""
        ...

    def requeue_lost(
        self,
        expired_before: int | None,
        *,
        below: int,
        now: int,
        reason: str,
        error_code: str,
        attempt_stamp: str,
        sample: int,
        owned_by: str | None = None,
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """PROCESSING → QUEUED for every lost lease (as :meth:`lost_leases` finds them) of
        an item lost fewer than ``below`` times counting this one, in a few statements
        whatever the count.

        Writes what a move per item would: a transition event, the run queued,
        its open attempt cancelled (a killed worker's, seed 002) with ``error_code``
        and a new RESUME attempt
        (id prefixed ``attempt_stamp``), chunks in flight pending, the orphan
        count up by one, the lease cleared. Returns how many, and the first
        ``sample`` by id as (id, run_id, orphan_count).
        """
        ...
