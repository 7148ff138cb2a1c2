"""SQLite leases: the claim, renewals, fenced writes, and the set-based requeue of lost leases."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from readdod.store.rows import ItemRow
from readdod.store.sqlite.base import (
    IDS_PER_STATEMENT,
    ITEM_SETTABLE,
    SqliteUnitBase,
    assignments,
    item_row,
    marks,
)
from readdod.store.sqlite.queries import QUERIES as Q


class SqliteLeaseQueries(SqliteUnitBase):
    """The leases of :class:`~readdod.store.api.LeaseQueries`, on SQLite."""

    def queue_due(self, now: int) -> bool:
        """Whether any QUEUED item is due to be claimed."""
        return self.execute(Q["queue_due"], (now,)).fetchone() is not None

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """Take up to ``limit`` due QUEUED items, P0 first then oldest."""
        # Only items rows: nothing held back (artifacts, events, run steps) bears on it.
        rows = self._execute_now(Q["claim_items"], (owner, lease_until, now, now, limit)).fetchall()
        items = [item_row(r) for r in rows]
        items.sort(key=lambda i: (i.priority, i.created_at))
        return items

    def renew_leases(self, owner: str, item_ids: Iterable[str], until: int) -> set[str]:
        """Extend the leases ``owner`` still holds; returns the ids renewed."""
        ids = list(item_ids)
        renewed: set[str] = set()
        for start in range(0, len(ids), IDS_PER_STATEMENT):
            chunk = ids[start : start + IDS_PER_STATEMENT]
            rows = self._execute_now(
                "UPDATE items SET lease_expires_at = ? WHERE lease_owner = ?"
                f" AND status = 'PROCESSING' AND id IN ({marks(chunk)}) RETURNING id",
                [until, owner, *chunk],
            ).fetchall()
            renewed.update(r[0] for r in rows)
        return renewed

    def held_by(self, owner: str) -> list[ItemRow]:
        """The PROCESSING items whose lease ``owner`` holds."""
        return [item_row(r) for r in self.execute(Q["held_by"], (owner,)).fetchall()]

    def holds_lease(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None
    ) -> bool:
        row = self._execute_now(Q["holds_lease"], (item_id, owner, run_id, token)).fetchone()
        return row is not None

    def update_fenced(
        self, item_id: str, owner: str, run_id: str, *, token: int | None = None, **fields: Any
    ) -> bool:
        """Update an item only while ``owner`` holds its lease for ``run_id`` (the claim
        that issued ``token``)."""
        sets, values = assignments(fields, ITEM_SETTABLE)
        cur = self._execute_now(
            f"UPDATE items SET {sets} WHERE id = ? AND status = 'PROCESSING' AND lease_owner = ?"
            " AND current_run_id = ? AND lease_token = coalesce(?, lease_token)",
            [*values, item_id, owner, run_id, token],
        )
        return cur.rowcount == 1

    # --- lost leases ----------------------------------------------------------

    def lost_leases(
        self, expired_before: int | None, *, at_least: int = 0, owned_by: str | None = None
    ) -> list[ItemRow]:
        """PROCESSING items whose lease ran out before ``expired_before`` (None: every lease,
        for a daemon that holds the store alone) or an earlier life of this daemon
        (``owned_by``) held, lost ``at_least`` times before, by id."""
        rows = self.execute(
            Q["lost_leases"],
            {"before": _before(expired_before), "at_least": at_least, "mine": owned_by},
        ).fetchall()
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
        """PROCESSING → QUEUED, at once, for every lost lease (as :meth:`lost_leases` finds
        them) of an item lost fewer than ``below`` times counting this one.

        What a move per item writes, in the same few statements whatever the
        count: a transition event each, the run queued again, its lost attempt
        failed with ``error_code`` and a RESUME attempt (id prefixed
        ``attempt_stamp``), its chunks in flight pending, the orphan count up by
        one, the lease cleared. Returns how many, and the first ``sample`` by id
        as (id, run_id, orphan_count).
        """
        args: dict[str, Any] = {
            "before": _before(expired_before),
            "below": below,
            "now": now,
            "reason": reason,
            "code": error_code,
            "stamp": attempt_stamp,
            "sample": sample,
            "mine": owned_by,
        }
        total = int(self.execute(Q["count_lost_below"], args).fetchone()[0])
        if not total:
            return 0, []
        rows = self.execute(Q["sample_lost_below"], args).fetchall()
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
        return total, [(r[0], r[1], int(r[2])) for r in rows]


def _before(expired_before: int | None) -> int:
    """A lease deadline every lease is before, when every lease counts as lost."""
    return (1 << 62) if expired_before is None else expired_before
