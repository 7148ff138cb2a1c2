"""The unit of work: the one place an item's status is written.

A core operation is a synchronous function of a :class:`Work`, run by
:meth:`Units.commit` as one transaction of the store. :class:`Work` wraps
the store's unit with the moves the state machine allows: every status
write (a move, a new item's first states, a claim, a lost lease's return)
goes through a method here, checked against :mod:`readdod.items.states` with a
real exception, and leaves its event row and its log line. What a unit has
to say (log lines, ``watch`` events, wake-ups) is collected as notes and
told only after the commit, so nothing is announced that did not happen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import msgspec

from readdod.errors import ErrorCode, InvalidTransition, NotFound
from readdod.items.states import Status, Trigger, allowed, refusal_code, require
from readdod.runtime.clock import Clock
from readdod.runtime.events import EventBus
from readdod.runtime.logging import get_logger
from readdod.store.api import StepSlot, Store, UnitOfWork
from readdod.store.rows import ItemRow

T = TypeVar("T")
S = Status
log = get_logger("readdod.core")
_json: Final = msgspec.json.Encoder()

__all__ = ["Note", "UnitOfWork", "Units", "Work", "dumps", "item_row"]


def dumps(obj: Any) -> str:
    return _json.encode(obj).decode()


class Note(msgspec.Struct):
    """One thing a unit tells after its commit: a log line and a ``watch`` event."""

    event: str
    fields: dict[str, Any]


def transition_note(
    item_id: str,
    run_id: str | None,
    src: str,
    dst: str,
    trigger: str,
    detail: dict[str, Any] | None = None,
) -> Note:
    """The ``item.transition`` line (and watch event) of one status change."""
    return Note(
        "item.transition",
        {
            "item_id": item_id,
            "run_id": run_id,
            "from": src,
            "to": dst,
            "trigger": trigger,
            **(detail or {}),
        },
    )


def item_row(tx: UnitOfWork, item_id: str) -> ItemRow:
    """The item, or NOT_FOUND with what to do about it."""
    row = tx.item(item_id)
    if row is None:
        raise NotFound(f"no item with id {item_id!r}; `readdod ls` lists the items")
    return row


class Work:
    """One transaction's view of the store, with the moves the state machine allows."""

    __slots__ = ("notes", "tx")

    def __init__(self, tx: UnitOfWork) -> None:
        self.tx = tx
        self.notes: list[Note] = []

    def note(self, event: str, **fields: Any) -> None:
        self.notes.append(Note(event, fields))

    def row(self, item_id: str) -> ItemRow:
        return item_row(self.tx, item_id)

    def record(
        self,
        now: int,
        item_id: str,
        run_id: str | None,
        src: str,
        dst: str,
        trigger: str,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """A status change's event row and its note; the status write is the caller's."""
        self.tx.insert_event(
            now, item_id, run_id, "transition", src, dst, trigger, dumps(detail or {})
        )
        self.notes.append(transition_note(item_id, run_id, src, dst, trigger, detail))

    def move(
        self,
        row: ItemRow,
        dst: Status,
        trigger: Trigger,
        *,
        now: int,
        detail: dict[str, Any] | None = None,
        **fields: Any,
    ) -> ItemRow:
        """Check and apply one transition, with its event row; refuse what the table forbids."""
        src = Status(row.status)
        if not allowed(src, dst, trigger):
            code = ErrorCode(refusal_code(src))
            hint = " It is being processed; wait for it to finish." if src is S.PROCESSING else ""
            raise InvalidTransition(
                f"item {row.id} is {src}; it cannot go to {dst}.{hint}",
                src=src,
                dst=dst,
                code=code,
            )
        fields.setdefault("updated_at", now)
        if not self.tx.set_status(row.id, src, dst, **fields):
            raise InvalidTransition(
                f"item {row.id} changed while this request ran; try again", src=src, dst=dst
            )
        run_id = fields.get("current_run_id", row.current_run_id)
        if src is S.PROCESSING and row.current_run_id:
            # A run that stops has no chunk in flight: those not done start again as pending.
            self.tx.settle_chunks(row.current_run_id, now)
        self.record(now, row.id, run_id, src, dst, trigger, detail)
        return msgspec.structs.replace(row, status=dst.value, **fields)

    def touch(self, row: ItemRow, **fields: Any) -> None:
        """Change fields of an item that keeps its status (a person's score edit)."""
        self.tx.set_status(row.id, row.status, row.status, **fields)

    def insert(self, row: ItemRow, path: Sequence[tuple[Status, Status, Trigger]]) -> None:
        """Write a new item at the end of ``path``, each hop checked (a capture that queues,
        or starts, at once: one row write, whatever the hops)."""
        for src, dst, trigger in path:
            require(src, dst, trigger)
        end = path[-1][1] if path else S.CAPTURED
        if row.status != end:
            raise ValueError(f"a new item at the end of {path} is {end}, not {row.status}")
        self.tx.insert_item(row)

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
        """PROCESSING → QUEUED for every lost lease of an item lost fewer than ``below``
        times (set-based: a restart after a crash with 100,000 items in flight)."""
        require(S.PROCESSING, S.QUEUED, Trigger.SYSTEM)
        return self.tx.requeue_lost(
            expired_before,
            below=below,
            now=now,
            reason=reason,
            error_code=error_code,
            attempt_stamp=attempt_stamp,
            sample=sample,
            owned_by=owned_by,
        )

    def claim(self, owner: str, limit: int, lease_until: int, now: int) -> list[ItemRow]:
        """QUEUED → PROCESSING for up to ``limit`` items, the oldest of the first priority."""
        require(S.QUEUED, S.PROCESSING, Trigger.SYSTEM)
        return self.tx.claim(owner, limit, lease_until, now)


class Units:
    """Runs units of work and tells, after each commit, what they did."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        #: Committed events for ``watch`` subscribers (published after each commit).
        self.bus = EventBus(clock)
        self._enqueued: list[Callable[[], None]] = []
        self._scheduled: list[Callable[[], None]] = []
        self._ready: list[Callable[[str], None]] = []
        self._observers: list[Callable[[Sequence[Note]], None]] = []

    def on_enqueue(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after any commit that made an item QUEUED."""
        self._enqueued.append(callback)

    def on_retry_scheduled(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after any commit that scheduled an automatic retry."""
        self._scheduled.append(callback)

    def on_ready(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(item_id)`` after a run's commit made an item READY."""
        self._ready.append(callback)

    def observe(self, callback: Callable[[Sequence[Note]], None]) -> None:
        """Call ``callback(notes)`` after every commit with what it noted (the metrics, the
        other daemons)."""
        self._observers.append(callback)

    async def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        return await self.store.read(fn)

    async def commit(
        self, fn: Callable[[Work], T], *, alone: bool = False, slot: StepSlot | None = None
    ) -> T:
        """Run ``fn`` in one transaction; once committed, tell what it noted. ``slot``: the
        step slot ``fn`` reads first (see :meth:`Store.write`)."""
        work: Work | None = None

        def unit(tx: UnitOfWork) -> T:
            nonlocal work
            # A unit may run again (its batch retried): only the last run's notes count.
            work = Work(tx)
            return fn(work)

        result = await self.store.write(unit, alone=alone, slot=slot)
        assert work is not None
        self._tell(work.notes)
        return result

    def _tell(self, notes: list[Note]) -> None:
        for observer in self._observers:
            observer(notes)
        enqueued = scheduled = False
        # Per item: did this commit end with a run having made it READY?
        ready: dict[str, bool] = {}
        for note in notes:
            log.info(note.event, **note.fields)
            self.bus.publish(note.event, **note.fields)
            to = note.fields.get("to")
            enqueued = enqueued or to == S.QUEUED or note.event == "daemon.resumed"
            scheduled = scheduled or note.event == "retry.scheduled"
            if note.event == "item.transition":
                ready[note.fields["item_id"]] = (
                    note.fields.get("from") == S.PROCESSING and to == S.READY
                )
        if enqueued:
            for callback in self._enqueued:
                callback()
        if scheduled:
            for callback in self._scheduled:
                callback()
        for item_id, made_ready in ready.items():
            if made_ready:
                for on_ready in self._ready:
                    on_ready(item_id)
