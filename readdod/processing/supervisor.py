"""Claims QUEUED items and runs one actor per item.

Event-driven: the core wakes the supervisor whenever it queues work, so
pickup has no polling delay; a slow timer is only a safety net. Leases live
in memory; :class:`~readdod.loops.heartbeat.Heartbeat` renews them all in
one transaction. The supervisor is the core's
:class:`~readdod.core.workers.Workers`: the daemon attaches it, and the core
hands it captures to claim in their own transaction, cancels and pauses.

Every claim goes one way, :meth:`Supervisor._claim`, the claim loop's and a
capture's alike. How many items a claim takes is decided inside its transaction,
against the slots free at that moment (:meth:`Supervisor._take`), so no claim
holds slots it may not fill while it waits for the database, and claims that run
at once never start more actors than ``concurrency``.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus

from readdod.core.book import LeaseBook
from readdod.core.leases import Claimed, Leases
from readdod.core.unit import Work
from readdod.errors import ReaddodError
from readdod.processing import actor
from readdod.processing.pipeline import Pipeline
from readdod.runtime.events import EventSink
from readdod.runtime.logging import get_logger

log = get_logger("readdod.supervisor")
T = TypeVar("T")

#: The least time a cleanup (an actor's, the sweep after the drain, leaving the fleet's
#: registry) gets, even once the stop's grace is spent: ample for a database that answers.
CLEANUP_MIN_S = 0.5


def worker_id(instance: str | None = None) -> str:
    """This process's lease owner id: ``instance`` (the daemon's lasting name, by default
    the host's), the pid, and a random part that no other life of the daemon shares."""
    return f"{instance or socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Supervisor:
    def __init__(
        self,
        leases: Leases,
        book: LeaseBook,
        events: EventSink,
        pipeline: Pipeline,
        *,
        owner: str,
        concurrency: int,
        batch_size: int,
        lease_ttl_s: float,
        claim_interval_s: float,
        shutdown_grace_s: float,
        paused: bool = False,
    ) -> None:
        self.leases = leases
        self.book = book
        self.events = events
        self.pipeline = pipeline
        self.owner = owner
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.lease_ttl_ms = int(lease_ttl_s * 1000)
        self.claim_interval_s = claim_interval_s
        self.shutdown_grace_s = shutdown_grace_s
        #: When the drain must be over (monotonic seconds), once a stop was asked.
        self._stop_by: float | None = None
        self._claiming = anyio.CancelScope()
        self.paused = paused
        self.draining = False
        self._actors: dict[str, anyio.CancelScope] = {}
        #: Slots taken by claims whose transactions have not returned yet; a claim's
        #: transaction runs in the store's thread, so these are counted under a lock.
        self._taken = 0
        self._slots = threading.Lock()
        self._tg: TaskGroup | None = None
        #: Why an actor was stopped early, by its scope (an item may have a newer actor):
        #: ``cancel`` (``archive --cancel``) or ``pause``.
        self._stopped: dict[anyio.CancelScope, str] = {}
        #: Set when the actor of each scope has ended.
        self._ended: dict[anyio.CancelScope, anyio.Event] = {}
        self._wake = anyio.Event()
        self._idle = anyio.Event()

    @property
    def in_flight(self) -> int:
        return len(self._actors)

    def wake(self) -> None:
        self._wake.set()

    def held(self) -> list[str]:
        """The items whose actors run now (their leases the heartbeat renews)."""
        return list(self._actors)

    def lost(self, item_id: str) -> bool:
        """The lease of ``item_id`` is gone: stop its actor; False if none runs."""
        scope = self._actors.get(item_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    async def claim_with(self, first: Callable[[Work], T]) -> tuple[T, list[Claimed]]:
        """A capture's claim: ``first`` commits with a claim of one free slot, so the item
        it queues starts with no second commit; with no slot free, ``first`` alone."""
        done, claimed, _ = await self._claim(1, first)
        return done, claimed

    def set_paused(self, paused: bool) -> None:
        """Pause or resume claiming. A pause also stops spending at once: every running
        actor is cancelled where it is (its model request too) and gives its item back
        to QUEUED; finished steps and chunks are kept for the run's next attempt."""
        self.paused = paused
        if paused:
            for scope in self._actors.values():
                self._stopped.setdefault(scope, "pause")
                scope.cancel()
        self.wake()

    async def pause(self) -> None:
        """:meth:`set_paused` and wait until the stopped actors gave their items back."""
        ending = [self._ended[scope] for scope in self._actors.values()]
        self.set_paused(True)
        with anyio.move_on_after(actor.CLEANUP_TIMEOUT_S):
            for ended in ending:
                await ended.wait()

    def stop(self) -> None:
        """Begin the drain: claim nothing more; actors stop at their next step. The drain
        and the sweep after it end by the shutdown grace (the sweep has at least
        :data:`SWEEP_MIN_S`), whatever the database does meanwhile."""
        if not self.draining:
            self._stop_by = time.monotonic() + self.shutdown_grace_s
        self.draining = True
        # A claim cut short may leave a lease without its actor: the sweep gives it back.
        self._claiming.cancel()
        self.wake()

    async def wait_idle(self) -> None:
        """Return once no actor is running."""
        if self._actors:
            await self._idle.wait()

    def cancel(self, item_id: str) -> bool:
        """Stop the actor running ``item_id`` (``archive --cancel``); False if none runs.

        The core has already taken the lease back, so nothing the
        actor still tries to write gets through. ``actor.cancelled`` is
        logged once the actor has stopped.
        """
        scope = self._actors.get(item_id)
        if scope is None:
            return False
        self._stopped[scope] = "cancel"
        scope.cancel()
        return True

    def force_stop(self) -> None:
        """A second signal: skip the grace period, cancel every actor now."""
        self.stop()
        for scope in list(self._actors.values()):
            scope.cancel()

    def cleanup_s(self, default_s: float) -> float:
        """How long a shielded cleanup may take now: ``default_s``, or once a stop was
        asked what is left of its grace (at least :data:`CLEANUP_MIN_S`)."""
        if self._stop_by is None:
            return default_s
        return min(default_s, max(CLEANUP_MIN_S, self._left(default_s)))

    def _left(self, otherwise: float) -> float:
        """Seconds left of the shutdown grace (``otherwise`` when no stop was asked)."""
        if self._stop_by is None:
            return otherwise
        return max(0.0, self._stop_by - time.monotonic())

    def _stop_reason(self) -> str | None:
        if self.draining:
            return "shutdown"
        if self.paused:
            return "pause"
        return None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            with self._claiming:  # a stop cancels a claim that waits for the database
                await self._claim_loop()
            self._tg = None
            if self._actors:
                log.info(
                    "daemon.draining", in_flight=len(self._actors), grace_s=self.shutdown_grace_s
                )
                with anyio.move_on_after(self._left(self.shutdown_grace_s)):
                    await self._idle.wait()
            tg.cancel_scope.cancel()
        # A clean stop leaves nothing PROCESSING: sweep up leases an actor could not give back.
        with anyio.move_on_after(self.cleanup_s(actor.CLEANUP_TIMEOUT_S), shield=True):
            try:
                moved = await self.leases.release_owned(self.owner)
            except ReaddodError as exc:
                log.warning("shutdown.release_failed", error_code=exc.error_code, error=exc.message)
            else:
                if moved:
                    log.info("shutdown.released", items=moved, worker_id=self.owner)

    async def _claim_loop(self) -> None:
        while not self.draining:
            self._wake = anyio.Event()
            if not self.paused:
                try:
                    await self._claim_free()
                except ReaddodError as exc:
                    # A busy or failing database must not kill the daemon: wait, try again.
                    log.warning("claim.failed", error_code=exc.error_code, error=exc.message)
            with anyio.move_on_after(self.claim_interval_s):
                await self._wake.wait()

    async def _claim_free(self) -> None:
        """Claim for every free slot, a batch at a time, while the queue has items."""
        while self._free(self.batch_size):
            _, _, full = await self._claim(self.batch_size, _nothing)
            if not full:
                return

    def _free(self, most: int) -> int:
        """How many slots, up to ``most``, a claim may fill now: none while paused or
        stopping."""
        if self._tg is None or self.paused or self.draining:
            return 0
        return max(0, min(most, self.concurrency - len(self._actors) - self._taken))

    async def _claim(self, most: int, first: Callable[[Work], T]) -> tuple[T, list[Claimed], bool]:
        """``first``, then a claim of up to ``most`` items, in one transaction; an actor
        starts for each item claimed. Also whether the claim took all it was given."""
        room = _Room(self, most)
        claimed: list[Claimed] = []
        try:
            done, claimed = await self.leases.claim_after(
                first, self.owner, room, self.lease_ttl_ms
            )
        finally:
            with self._slots:
                # The actors take the slots over (one count, seen at once by the next take).
                for c in claimed:
                    if self._tg is None:
                        # Stopping: the sweep after the drain gives the lease back (or it expires).
                        break
                    self._start(self._tg, c)
                room.close()
        return done, claimed, 0 < room.given == len(claimed)

    def _start(self, tg: TaskGroup, claimed: Claimed) -> None:
        scope = anyio.CancelScope()
        self._actors[claimed.lease.item_id] = scope
        self._ended[scope] = anyio.Event()
        self._idle = anyio.Event()
        tg.start_soon(self._run_actor, claimed, scope)

    async def _run_actor(self, claimed: Claimed, scope: anyio.CancelScope) -> None:
        def stop_reason() -> str | None:
            return self._stopped.get(scope) or self._stop_reason()

        try:
            with scope:
                await actor.run(
                    claimed, self.book, self.events, self.pipeline, stop_reason, self.cleanup_s
                )
        except Exception:
            # The actor could not even record its failure (the database refused).
            # Its lease is no longer renewed, so the item returns to QUEUED when it expires.
            log.exception(
                "actor.crashed",
                item_id=claimed.lease.item_id,
                run_id=claimed.lease.run_id,
                worker_id=self.owner,
            )
        finally:
            item_id = claimed.lease.item_id
            # Only its own entry: a newer actor for the same item may already be running.
            if self._actors.get(item_id) is scope:
                del self._actors[item_id]
            if self._stopped.pop(scope, None) == "cancel":
                log.info("actor.cancelled", item_id=item_id, worker_id=self.owner)
            self._ended.pop(scope).set()
            if not self._actors:
                self._idle.set()
            self.wake()


def _nothing(_work: Work) -> None:
    """No work before a claim of the claim loop's own."""


class _Room:
    """One claim's slots (:class:`~readdod.core.leases.Room`): taken inside its
    transaction from what is free then, the unused ones given back at once, the rest
    when the claim's actors have started (:meth:`close`)."""

    def __init__(self, sup: Supervisor, most: int) -> None:
        self.sup = sup
        self.most = most
        #: What the last run of the transaction was given, and what it still holds.
        self.given = 0
        self.taken = 0
        #: The claim's caller is done with it (a transaction still running after its
        #: caller was cancelled claims nothing more).
        self.closed = False

    def take(self) -> int:
        with self.sup._slots:
            self.sup._taken -= self.taken  # an earlier run of the transaction rolled back
            self.taken = 0 if self.closed else self.sup._free(self.most)
            self.given = self.taken
            self.sup._taken += self.taken
        return self.given

    def keep(self, claimed: int) -> None:
        with self.sup._slots:
            self.sup._taken -= self.taken - claimed
            self.taken = claimed

    def close(self) -> None:
        """Give back what is still held (under the supervisor's lock)."""
        self.sup._taken -= self.taken
        self.taken = 0
        self.closed = True
