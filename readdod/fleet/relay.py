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

Only the notes another daemon acts on (a QUEUED item, a pause or resume, a
cancel) are always sent. The rest, what ``watch`` shows, are sent only while
some other daemon has a watcher: a daemon with watchers says so in a
``fleet.watching`` notice when its first one arrives and again every beat,
and the others send everything while they heard one within
:data:`WATCHING_BEATS` beats. A busy fleet that nobody watches sends next to
no notices.

Notices are best effort: one lost (a dropped connection, a listener too far
behind) costs a wake-up the claim timer makes up for, or a ``watch`` event;
never an item, which lives in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import anyio
from anyio.abc import TaskStatus

from readdod.core.fleet import Fleet
from readdod.core.unit import Note
from readdod.errors import ErrorCode, ReaddodError
from readdod.fleet.notices import Notice, pack, unpack
from readdod.runtime.clock import Clock, SystemClock
from readdod.runtime.events import EventSink
from readdod.runtime.logging import get_logger

log = get_logger("readdod.fleet")

#: Commits whose notes may wait to be sent; past that, the oldest are dropped.
OUTBOX: Final = 10_000
#: How long to wait before listening again after the store's channel failed.
RELISTEN_S: Final = 1.0
#: The longest wait between two tries while the channel stays down.
RELISTEN_MAX_S: Final = 5.0
#: Beats a ``fleet.watching`` notice keeps the others sending every note.
WATCHING_BEATS: Final = 3
WATCHING: Final = "fleet.watching"
#: How long a stopping daemon may spend sending its last notices.
FLUSH_TIMEOUT_S: Final = 2.0


class Bus(EventSink, Protocol):
    """This daemon's event bus: where the others' notes go, and who watches here."""

    @property
    def subscribers(self) -> int: ...

    def on_subscribe(self, callback: Callable[[], None]) -> None: ...


class Workers(Protocol):
    """What a notice may ask of this daemon's supervisor."""

    def wake(self) -> None: ...

    def set_paused(self, paused: bool) -> None: ...

    def cancel(self, item_id: str) -> bool: ...

    def cleanup_s(self, default_s: float) -> float: ...


def _wakes(event: str, fields: Mapping[str, Any]) -> bool:
    return fields.get("to") == "QUEUED" or event == "daemon.resumed"


def _acted_on(event: str, fields: Mapping[str, Any]) -> bool:
    """Whether another daemon acts on this note (and not only shows it to watchers)."""
    return (
        _wakes(event, fields)
        or event in ("daemon.paused", "daemon.resumed")
        or _cancels(event, fields) is not None
    )


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
    def __init__(
        self, fleet: Fleet, bus: Bus, workers: Workers, clock: Clock | None = None
    ) -> None:
        self.fleet = fleet
        self.bus = bus
        self.workers = workers
        self.clock = clock or SystemClock()
        self._outbox: list[Sequence[Note]] = []
        self._ready = anyio.Event()
        #: Until when (ms) another daemon's watchers want every note.
        self._watched_until = 0
        self._announce = anyio.Event()
        bus.on_subscribe(self._announce.set)
        #: Set once another daemon said it has watchers.
        self.heard_watching = anyio.Event()
        #: Notices sent and heard from other daemons, notes sent, commits dropped unsent.
        self.sent = 0
        self.heard = 0
        self.notes_sent = 0
        self.dropped = 0
        self._drained = anyio.Event()
        self._drained.set()

    @property
    def watched(self) -> bool:
        """Some other daemon has a watcher now (as far as its notices say)."""
        return self.clock.now_ms() < self._watched_until

    def committed(self, notes: Sequence[Note]) -> None:
        """The core's after-commit callback: queue ``notes`` for the other daemons."""
        if not self.watched:
            notes = [n for n in notes if _acted_on(n.event, n.fields)]
        self._queue(notes)

    def _queue(self, notes: Sequence[Note]) -> None:
        if not notes:
            return
        if len(self._outbox) >= OUTBOX:
            self._outbox.pop(0)
            self.dropped += 1
        self._outbox.append(notes)
        self._drained = anyio.Event() if self._drained.is_set() else self._drained
        self._ready.set()

    async def flush(self) -> None:
        """Return once every note queued so far was sent (or given up on)."""
        await self._drained.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self._listen)
                tg.start_soon(self._send)
                tg.start_soon(self._say_watching)
                task_status.started()
        finally:
            # A stopping daemon's last notes (the items it gave back) still go out.
            with anyio.move_on_after(self.workers.cleanup_s(FLUSH_TIMEOUT_S), shield=True):
                await self._send_batch()

    async def _say_watching(self) -> None:
        """While this daemon has watchers, tell the others every beat (and at once when the
        first arrives) to send every note."""
        while True:
            with anyio.move_on_after(self.fleet.beat_ms / 1000):
                await self._announce.wait()
            self._announce = anyio.Event()
            if self.bus.subscribers:
                self._queue([Note(WATCHING, {})])

    async def _send(self) -> None:
        while True:
            await self._ready.wait()
            self._ready = anyio.Event()
            await self._send_batch()

    async def _send_batch(self) -> None:
        batch, self._outbox = self._outbox, []
        notes = [(n.event, n.fields) for notes in batch for n in notes]
        for payload in pack(self.fleet.daemon_id, notes, self.fleet.notice_max_bytes):
            try:
                await self.fleet.notify(payload)
            except ReaddodError as exc:
                log.warning("fleet.notify_failed", error_code=exc.error_code, error=exc.message)
                break
            self.sent += 1
        self.notes_sent += len(notes)
        if not self._outbox:
            self._drained.set()

    async def _listen(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = failed = False
        wait = RELISTEN_S
        while True:
            try:
                async with self.fleet.listen() as heard:
                    if not started:
                        started = True
                        task_status.started()
                    if failed:
                        failed = False
                        wait = RELISTEN_S
                        log.info("fleet.relistened")
                        # Notices sent meanwhile are lost: claim whatever was queued.
                        self.workers.wake()
                    async for payload in heard:
                        notice = unpack(payload)
                        if notice is not None and notice.origin != self.fleet.daemon_id:
                            self.heard += 1
                            self.apply(notice)
            except Exception as exc:
                # Whatever the channel did, the daemon goes on: it listens again. Said once
                # per outage (the store says when the database is back), then tried again
                # less and less often while it lasts.
                if not failed:
                    code = (
                        exc.error_code
                        if isinstance(exc, ReaddodError)
                        else ErrorCode.INTERNAL_ERROR
                    )
                    message = exc.message if isinstance(exc, ReaddodError) else repr(exc)
                    log.warning("fleet.listen_failed", error_code=code, error=message)
                else:
                    wait = min(wait * 2, RELISTEN_MAX_S)
                failed = True
            if not started:
                started = True
                task_status.started()
            # The channel ended (its connection dropped): listen again shortly.
            await anyio.sleep(wait)

    def apply(self, notice: Notice) -> None:
        """Act on another daemon's notes."""
        wake = False
        for event, fields in notice.notes:
            if event == WATCHING:
                until = self.clock.now_ms() + WATCHING_BEATS * self.fleet.beat_ms
                self._watched_until = max(self._watched_until, until)
                self.heard_watching.set()
                continue
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
