"""The in-process event bus behind ``watch``.

The core publishes what it committed (transitions, step progress)
and the actor publishes step starts. Publishing never waits: each
subscriber has a bounded buffer, and one that falls behind is dropped (it
gets a final ``watch.dropped`` notice) instead of slowing the daemon.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from readdod.runtime.clock import Clock, SystemClock, iso

DROPPED: Final = "watch.dropped"


class BusEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One event as ``watch`` sends it (the ``params`` of an ``event`` notification)."""

    seq: int
    at: str
    event: str
    item_id: str | None = None
    run_id: str | None = None
    data: dict[str, Any] = {}


class EventSink(Protocol):
    """Where an actor tells ``watch`` what it starts (the bus; anything in tests)."""

    def publish(
        self, event: str, /, item_id: str | None = None, run_id: str | None = None, **data: Any
    ) -> None: ...


class Subscription:
    """One subscriber's view of the bus: iterate it for events, close it when done."""

    def __init__(self, bus: EventBus, item_id: str | None, buffer: int) -> None:
        self._bus = bus
        self.item_id = item_id
        self.buffer = buffer
        self._send: MemoryObjectSendStream[BusEvent]
        self._recv: MemoryObjectReceiveStream[BusEvent]
        self._send, self._recv = anyio.create_memory_object_stream[BusEvent](buffer)
        #: Why the bus let go of this subscriber; None while it keeps up.
        self.dropped: str | None = None
        self.last_seq = 0

    def _offer(self, event: BusEvent) -> bool:
        """Queue ``event`` without waiting; False once the subscriber is dropped."""
        if self.item_id is not None and event.item_id != self.item_id:
            return True
        try:
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            self.dropped = f"the subscriber fell {self.buffer} events behind"
            self._send.close()
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        self.last_seq = event.seq
        return True

    def notice(self) -> BusEvent:
        """The final event a dropped subscriber is told."""
        return BusEvent(
            seq=self.last_seq,
            at=iso(self._bus.clock.now_ms()) or "",
            event=DROPPED,
            item_id=self.item_id,
            data={
                "reason": self.dropped or "",
                "last_seq": self.last_seq,
                "hint": "reconnect and watch again; `readdod show ID` has the full history",
            },
        )

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> BusEvent:
        try:
            return await self._recv.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def ready(self, limit: int) -> list[BusEvent]:
        """Up to ``limit`` more events that are already waiting (none is waited for)."""
        out: list[BusEvent] = []
        while len(out) < limit:
            try:
                out.append(self._recv.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        return out

    def close(self) -> None:
        self._bus._remove(self)
        self._send.close()
        self._recv.close()


class EventBus:
    """Fan-out of committed events to live subscribers."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()
        self._subs: list[Subscription] = []
        self._seq = 0
        self.dropped = 0
        self._on_subscribe: list[Callable[[], None]] = []

    def on_subscribe(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever a subscriber arrives (the fleet's relay)."""
        self._on_subscribe.append(callback)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def subscribe(self, item_id: str | None = None, buffer: int = 1000) -> Subscription:
        sub = Subscription(self, item_id, max(1, buffer))
        self._subs.append(sub)
        for callback in self._on_subscribe:
            callback()
        return sub

    def _remove(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def publish(
        self, event: str, /, item_id: str | None = None, run_id: str | None = None, **data: Any
    ) -> None:
        """Hand ``event`` to every subscriber now; never blocks."""
        if not self._subs:
            return
        self._seq += 1
        ev = BusEvent(
            seq=self._seq,
            at=iso(self.clock.now_ms()) or "",
            event=event,
            item_id=item_id,
            run_id=run_id,
            data={k: v for k, v in data.items() if v is not None},
        )
        for sub in list(self._subs):
            if not sub._offer(ev):
                self._remove(sub)
                self.dropped += 1
