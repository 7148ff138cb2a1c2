"""This daemon's line to the others: its commits' notes out, theirs in.

After each commit the core hands the relay its notes; the relay sends them
as notices through the store (PostgreSQL: ``NOTIFY``, so they arrive only
once committed and within milliseconds). What the other daemons send is
acted on here as if this daemon had made it:

- an item made QUEUED, or a resume, wakes the supervisor to claim at once;
- a pause or a resume pauses or resumes this daemon's supervisor;
- a run cancelled (``archive --cancel``) stops its actor here, if it runs here;
- every note is published on this daemon's bus, so ``watch`` shows the whole
  fleet; those events carry ``daemon``, the id of the daemon that made them.

Notices are best effort: one lost (a dropped connection, a listener too far
behind) costs a wake-up the claim timer makes up for, or a ``watch`` event;
never an item, which lives in the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import anyio
from anyio.abc import TaskStatus

from readdod.core.fleet import Fleet
from readdod.core.unit import Note
from readdod.errors import ReaddodError
from readdod.events import EventSink
from readdod.fleet.notices import Notice, pack, unpack
from readdod.logging import get_logger

log = get_logger("readdod.fleet")

#: Commits whose notes may wait to be sent; past that, the oldest are dropped.
OUTBOX: Final = 10_000
#: How long to wait before listening again after the store's channel failed.
RELISTEN_S: Final = 1.0


class Workers(Protocol):
    """What a notice may ask of this daemon's supervisor."""

    def wake(self) -> None: ...

    def set_paused(self, paused: bool) -> None: ...

    def cancel(self, item_id: str) -> bool: ...


def _wakes(event: str, fields: Mapping[str, Any]) -> bool:
    return fields.get("to") == "QUEUED" or event == "daemon.resumed"


def _cancels(event: str, fields: Mapping[str, Any]) -> str | None:
    """The item whose run a note cancelled, if it did."""
    if (
        event == "item.transition"
        and fields.get("from") == "PROCESSING"
        and fields.get("reason") == "cancel"
        and isinstance(fields.get("item_id"), str)
    ):
        return str(fields["item_id"])
    return None


class Relay:
    def __init__(self, fleet: Fleet, bus: EventSink, workers: Workers) -> None:
        self.fleet = fleet
        self.bus = bus
        self.workers = workers
        self._outbox: list[Sequence[Note]] = []
        self._ready = anyio.Event()
        #: Notices sent and heard from other daemons, and commits dropped unsent.
        self.sent = 0
        self.heard = 0
        self.dropped = 0

    def committed(self, notes: Sequence[Note]) -> None:
        """The core's after-commit callback: queue ``notes`` for the other daemons."""
        if not notes:
            return
        if len(self._outbox) >= OUTBOX:
            self._outbox.pop(0)
            self.dropped += 1
        self._outbox.append(notes)
        self._ready.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            await tg.start(self._listen)
            tg.start_soon(self._send)
            task_status.started()

    async def _send(self) -> None:
        while True:
            await self._ready.wait()
            self._ready = anyio.Event()
            batch, self._outbox = self._outbox, []
            notes = [(n.event, n.fields) for notes in batch for n in notes]
            for payload in pack(self.fleet.daemon_id, notes, self.fleet.notice_max_bytes):
                try:
                    await self.fleet.notify(payload)
                except ReaddodError as exc:
                    log.warning("fleet.notify_failed", error_code=exc.error_code, error=exc.message)
                    break
                self.sent += 1

    async def _listen(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        while True:
            try:
                async with self.fleet.listen() as heard:
                    if not started:
                        started = True
                        task_status.started()
                    async for payload in heard:
                        notice = unpack(payload)
                        if notice is not None and notice.origin != self.fleet.daemon_id:
                            self.heard += 1
                            self.apply(notice)
            except ReaddodError as exc:
                log.warning("fleet.listen_failed", error_code=exc.error_code, error=exc.message)
            if not started:
                started = True
                task_status.started()
            # The channel ended (its connection dropped): listen again shortly.
            await anyio.sleep(RELISTEN_S)

    def apply(self, notice: Notice) -> None:
        """Act on another daemon's notes."""
        wake = False
        for event, fields in notice.notes:
            self.bus.publish(event, **{**fields, "daemon": notice.origin})
            wake = wake or _wakes(event, fields)
            if event == "daemon.paused":
                self.workers.set_paused(True)
            elif event == "daemon.resumed":
                self.workers.set_paused(False)
            item_id = _cancels(event, fields)
            if item_id is not None and self.workers.cancel(item_id):
                log.info("fleet.cancelled", item_id=item_id, by=notice.origin)
        if wake:
            self.workers.wake()
