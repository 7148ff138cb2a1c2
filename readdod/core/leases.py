"""Leases: claiming queued items, renewing what is held, recovering what was lost.

A lease is the right to write for one run of one item, held by one worker
until ``lease_expires_at``. The supervisor claims and renews; whatever a
lost worker held (its lease ran out, or the daemon died) returns to QUEUED,
or fails with WORKER_LOST once an item has been lost too often in a row, so
a page that kills the process cannot crash-loop it. What an actor writes
under its lease is in :mod:`readdod.core.book`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Protocol, TypeVar

import msgspec

from readdod.core.runs import RunPolicy, fail, requeue
from readdod.core.unit import Note, Units, Work, dumps, transition_note
from readdod.errors import ErrorCode
from readdod.items.states import Status, Trigger
from readdod.runtime import ids
from readdod.steps import wire_step
from readdod.store import ArtifactRow, ItemRow

S = Status
T = TypeVar("T")
#: The failure message of an item whose worker was lost too often (printf: count, step, id).
WORKER_LOST_MESSAGE: Final = (
    "the worker processing this item was lost %d times in a row during step %s;"
    " it may crash readdod. Retry with `readdod process %s`."
)
#: Orphans logged one by one (a transition line each); the rest are counted in one line.
ORPHAN_LINES: Final = 100
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


def claimed(
    row: ItemRow,
    owner: str,
    run_id: str,
    mode: str,
    *,
    refetch: bool,
    done: dict[str, ArtifactRow],
    source: tuple[str | None, str | None, str | None] | None,
) -> Claimed:
    """What an actor is handed for a claimed item."""
    return Claimed(
        lease=Lease(row.id, owner, run_id, row.lease_token),
        item=row,
        run_mode=mode,
        refetch=refetch,
        done=done,
        source=source,
    )


class Room(Protocol):
    """The slots a claim may fill, counted inside its transaction (which may run again
    when its batch is retried: each run asks anew)."""

    def take(self) -> int:
        """How many items this claim may take now."""
        ...

    def keep(self, claimed: int) -> None:
        """The claim took ``claimed`` items: the rest of what it was given is free again."""
        ...


class Leases:
    """The supervisor's side of the core: claim, renew, recover, release."""

    def __init__(self, units: Units, policy: RunPolicy) -> None:
        self.units = units
        self.clock = units.clock
        self.policy = policy

    async def claim(self, owner: str, limit: int, lease_ttl_ms: int) -> list[Claimed]:
        """Lease up to ``limit`` QUEUED items to ``owner``, starting their runs."""
        return await self.units.commit(lambda work: self._claim(work, owner, limit, lease_ttl_ms))

    async def claim_after(
        self, first: Callable[[Work], T], owner: str, room: Room, lease_ttl_ms: int
    ) -> tuple[T, list[Claimed]]:
        """``first`` (a capture), then :meth:`claim`, in one transaction: an item it
        queues may be claimed with no second commit. How many items are claimed is
        asked of ``room`` inside the transaction; 0: none."""

        def unit(work: Work) -> tuple[T, list[Claimed]]:
            done = first(work)
            most = room.take()
            out = self._claim(work, owner, most, lease_ttl_ms) if most > 0 else []
            room.keep(len(out))
            return done, out

        return await self.units.commit(unit)

    def _claim(self, work: Work, owner: str, limit: int, lease_ttl_ms: int) -> list[Claimed]:
        """The claim inside ``work``: the one place items are leased."""
        tx = work.tx
        now = self.clock.now_ms()
        rows = work.claim(owner, limit, now + lease_ttl_ms, now)
        run_ids = [r.current_run_id for r in rows if r.current_run_id]
        runs = tx.start_runs(run_ids, owner, now)
        tx.start_attempts(run_ids, owner, now, ids.ulid)
        sources = tx.small_sources(
            [r.id for r in rows if r.source_type != "url"], CLAIM_SOURCE_MAX_CHARS
        )
        detail = dumps({"worker_id": owner})
        events = []
        out = []
        for row in rows:
            run = runs[row.current_run_id or ""]
            events.append((now, row.id, run.run_id, "transition", S.QUEUED, S.PROCESSING, detail))
            work.notes.append(
                transition_note(
                    row.id, run.run_id, S.QUEUED, S.PROCESSING, Trigger.SYSTEM, {"worker_id": owner}
                )
            )
            # Only a run claimed before can have finished steps to resume from.
            resumed = run.attempts > 1
            out.append(
                claimed(
                    row,
                    owner,
                    run.run_id,
                    run.mode,
                    refetch=bool(run.refetch),
                    done=tx.artifacts_of_run(row.id, run.run_id) if resumed else {},
                    source=sources.get(row.id),
                )
            )
        tx.insert_events(events, Trigger.SYSTEM)
        return out

    async def renew(self, owner: str, item_ids: Sequence[str], lease_ttl_ms: int) -> set[str]:
        """Extend ``owner``'s leases on ``item_ids``; the ids it still held."""
        until = self.clock.now_ms() + lease_ttl_ms
        return await self.units.store.write(lambda tx: tx.renew_leases(owner, item_ids, until))

    async def recover(
        self, *, every_lease: bool = True, mine: str | None = None
    ) -> tuple[int, int]:
        """At start: return what lost workers held to QUEUED (or fail it WORKER_LOST).

        ``every_lease``: this daemon holds the store alone (SQLite's instance
        lock), so every lease it finds is a dead daemon's, expired or not.
        Daemons that share a store recover expired leases only, and those of
        an earlier life of this one: owners whose id starts with ``mine``
        (dead for sure: this daemon holds its data directory's lock).
        Returns (requeued, failed).
        """
        return await self.units.commit(
            lambda work: self._recover(
                work,
                self.clock.now_ms(),
                reason="orphan_recovery",
                expired_before=None if every_lease else self.clock.now_ms(),
                owned_by=mine,
            )
        )

    async def requeue_expired(self) -> int:
        """Return items whose lease ran out (a dead or stalled worker) to QUEUED."""

        def unit(work: Work) -> int:
            now = self.clock.now_ms()
            requeued, failed = self._recover(work, now, reason="lease_expired", expired_before=now)
            return requeued + failed

        return await self.units.commit(unit)

    async def release_owned(self, owner: str, reason: str = "shutdown") -> int:
        """PROCESSING → QUEUED for every lease ``owner`` still holds (a clean stop).

        An actor whose own release failed (the database was locked), or an
        item claimed at capture whose actor never started, would otherwise
        wait for recovery and count as orphaned. Returns how many moved.
        """

        def unit(work: Work) -> int:
            now = self.clock.now_ms()
            held = work.tx.held_by(owner)
            for row in held:
                requeue(work, row, reason, now)
            return len(held)

        return await self.units.commit(unit)

    def _recover(
        self,
        work: Work,
        now: int,
        *,
        reason: str,
        expired_before: int | None,
        owned_by: str | None = None,
    ) -> tuple[int, int]:
        """Requeue every lost lease, or fail its item once it was lost too often in a row.

        The requeue is set-based (the store's :meth:`requeue_lost`): a restart
        after a crash with 100,000 items in flight takes a second or so rather
        than the many seconds of one move per item. The few items that reached
        the limit fail one by one through :func:`readdod.core.runs.fail`, the
        one place a failure is made. Log lines go per item for the first
        ``ORPHAN_LINES`` orphans by id, then one ``recovery.unlisted`` line; the
        events table has a row for every one.
        """
        limit = self.policy.max_orphanings
        lost_note = f"the worker running this attempt was lost ({reason})"
        listed: dict[str, list[Note]] = {}
        for row in work.tx.lost_leases(expired_before, at_least=limit - 1, owned_by=owned_by):
            count = row.orphan_count + 1
            run = work.tx.run(row.current_run_id) if row.current_run_id else None
            step = (run.current_step if run is not None else None) or "extraction"
            if run is not None:
                # A killed worker's attempt is cancelled (seed 002); the run fails below.
                work.tx.end_attempt(
                    run.run_id,
                    "cancelled",
                    now,
                    error_code=ErrorCode.WORKER_LOST,
                    error_message=lost_note,
                )
            told = len(work.notes)
            fail(
                work,
                self.policy,
                row,
                step,
                ErrorCode.WORKER_LOST,
                WORKER_LOST_MESSAGE % (count, wire_step(step), row.id),
                # Retried once the daemon has run cleanly a while ([retry] worker_lost).
                True,
                None,
                now,
                orphan_count=count,
            )
            listed[row.id] = work.notes[told:]
            del work.notes[told:]
        failed = len(listed)
        requeued, sample = work.requeue_lost(
            expired_before,
            below=limit,
            now=now,
            reason=reason,
            error_code=ErrorCode.WORKER_LOST,
            attempt_stamp=ids.ulid(now)[:10],
            sample=ORPHAN_LINES,
            owned_by=owned_by,
        )
        for item_id, run_id, count in sample:
            listed[item_id] = [
                transition_note(
                    item_id,
                    run_id,
                    S.PROCESSING,
                    S.QUEUED,
                    Trigger.SYSTEM,
                    {"reason": reason, "orphan_count": count},
                ),
                Note("recovery.requeued", {"item_id": item_id, "run_id": run_id, "reason": reason}),
            ]
        shown = sorted(listed)[:ORPHAN_LINES]
        for item_id in shown:
            work.notes.extend(listed[item_id])
        if requeued + failed > len(shown):
            work.note(
                "recovery.unlisted",
                reason=reason,
                count=requeued + failed - len(shown),
                requeued=requeued,
                failed=failed,
            )
        return requeued, failed
