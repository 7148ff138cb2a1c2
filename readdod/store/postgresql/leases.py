"""PostgreSQL leases: the claim (``FOR UPDATE SKIP LOCKED``), renewals in one statement,
fenced writes, and the set-based requeue of lost leases."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from readdod.store.postgresql.base import PostgresUnitBase, item_row
from readdod.store.postgresql.queries import QUERIES as Q
from readdod.store.rows import ItemRow

#: A lease deadline every lease is before, when every lease counts as lost.
_EVERY_LEASE = 1 << 62


def _before(expired_before: int | None) -> int:
    return _EVERY_LEASE if expired_before is None else expired_before


class PostgresLeaseQueries(PostgresUnitBase):
    """The leases of :class:`~readdod.store.api.LeaseQueries`, on PostgreSQL."""

    def queue_due(self, now: int) -> bool:
        return self.one(Q["queue_due"], (now,)) is not None

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Take up to ``limit`` due QUEUED items, P0 first then oldest; rows another
        daemon is claiming at the same moment are skipped, not waited for."""
        rows = self.all(
            Q["claim_items"], {"owner": owner, "until": lease_until, "now": now, "limit": limit}
        )
        items = [item_row(r) for r in rows]
        items.sort(key=lambda i: (i.priority, i.created_at))
        return items

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        """Extend the leases ``owner`` still holds, all in one statement; the ids held.
        A row locked by another transaction at that moment is not waited for (see the
        query): it counts as held, and is renewed at the next beat."""
        ids = list(item_ids)
        if not ids:
            return set()
        return {
            r[0] for r in self.all(Q["renew_leases"], {"until": until, "owner": owner, "ids": ids})
        }

    def held_by(self, owner: str) -> list[ItemRow]:
        return [item_row(r) for r in self.all(Q["held_by"], (owner,))]

    def holds_lease(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None
    ) -> bool:
        sql = Q["holds_lease_locked" if self.writing else "holds_lease"]
        # Only the item row: nothing held back bears on it.
        return self.execute_now(sql, (item_id, owner, run_id, token)).fetchone() is not None

    def update_fenced(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None, **fields: Any
    ) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id`` (the claim
        that issued ``token``)."""
        return self.update_item(
            "id = %s AND status = 'PROCESSING' AND lease_owner = %s AND current_run_id = %s"
            " AND lease_token = coalesce(%s, lease_token)",
            fields,
            (item_id, owner, run_id, token),
        )

    # --- lost leases ----------------------------------------------------------

    def lost_leases(
        self, expired_before: int | None, *, at_least: int = 0, owned_by: str | None = None
    ) -> list[ItemRow]:
        rows = self.all(
            Q["lost_leases"],
            {"before": _before(expired_before), "at_least": at_least, "mine": owned_by},
        )
        return [item_row(r) for r in rows]

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
        """PROCESSING → QUEUED, at once, for every lost lease of an item lost fewer than
        ``below`` times counting this one (see the Protocol).

        The lost rows are locked first (``SKIP LOCKED``): two daemons recovering
        at once split them, and neither requeues an item twice.
        """
        locked = self.all(
            Q["lock_lost_below"],
            {"before": _before(expired_before), "below": below, "mine": owned_by},
        )
        if not locked:
            return 0, []
        args: dict[str, Any] = {
            "ids": [r[0] for r in locked],
            "now": now,
            "reason": reason,
            "code": error_code,
            "stamp": attempt_stamp,
            "sample": sample,
        }
        rows = self.all(Q["sample_lost"], args)
        # Events and runs first: they read the items before these change.
        for name in (
            "requeue_lost_events",
            "requeue_lost_runs",
            "end_lost_attempts",
            "resume_lost_runs",
            "settle_lost_chunks",
            "requeue_lost_items",
        ):
            self.execute(Q[name], args)
        return len(locked), [(r[0], r[1], int(r[2])) for r in rows]
