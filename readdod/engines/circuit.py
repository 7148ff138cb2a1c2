"""A circuit breaker for one model server: park work while the server is down.

After ``failures`` consecutive connection failures or 5xx answers the circuit
*opens*: requests no longer go out, and the AI steps that want one wait in
place instead of burning their attempts and failing. Their items stay
PROCESSING under a lease that the supervisor's heartbeat keeps renewing, so
the lease protocol is unchanged. A pause or a shutdown makes a waiting step
give up (``give_up``) and the actor returns the item to QUEUED, as it does at
a step boundary; nothing is recorded as a failure.

Every ``probe_s`` one waiting request is let through as the *probe* (the
circuit is then *half open*). If the server answers, whatever the answer, the
circuit closes and every waiter goes on; if not, it opens again for another
``probe_s``. The decisions are a small synchronous state machine
(:meth:`CircuitBreaker.try_enter`) driven by an injected clock; :meth:`enter`
adds the waiting.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Final

import anyio

from readdod.runtime.clock import Clock, SystemClock
from readdod.runtime.logging import get_logger

log = get_logger("readdod.engines.circuit")


class State(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Entry(enum.Enum):
    """What :meth:`CircuitBreaker.try_enter` allows."""

    GO = "go"
    PROBE = "probe"
    WAIT = "wait"


#: Longest single sleep of a waiter, so it re-checks (and sees a pause) within this time.
MAX_WAIT_S: Final = 1.0


class CircuitBreaker:
    def __init__(
        self, failures: int, probe_s: float, *, name: str = "ai", clock: Clock | None = None
    ) -> None:
        #: 0 disables the breaker: it never opens.
        self.failures = failures
        self.probe_ms = int(probe_s * 1000)
        self.name = name
        self.clock: Clock = clock or SystemClock()
        self._state = State.CLOSED
        self._count = 0
        self._opened_at = 0
        self._changed: anyio.Event | None = None

    @property
    def state(self) -> State:
        return self._state

    @property
    def consecutive_failures(self) -> int:
        return self._count

    def try_enter(self) -> Entry:
        """May a request go out now? ``PROBE`` makes the caller the probe."""
        if self._state is State.CLOSED:
            return Entry.GO
        if self._state is State.OPEN and self._due_in_ms() <= 0:
            self._state = State.HALF_OPEN
            log.info("circuit.half_open", circuit=self.name)
            return Entry.PROBE
        return Entry.WAIT

    def _due_in_ms(self) -> int:
        return self._opened_at + self.probe_ms - self.clock.now_ms()

    def succeeded(self) -> None:
        """The server answered (any answer, even an error of ours)."""
        self._count = 0
        if self._state is not State.CLOSED:
            self._state = State.CLOSED
            log.info("circuit.closed", circuit=self.name)
            self._wake()

    def failed(self) -> None:
        """A connection failure or a 5xx."""
        self._count += 1
        if self._state is State.HALF_OPEN or (
            self._state is State.CLOSED and self.failures and self._count >= self.failures
        ):
            self._open()

    def abandoned(self) -> None:
        """The probe ended without an answer either way (cancelled): let another probe."""
        if self._state is State.HALF_OPEN:
            self._state = State.OPEN
            self._opened_at = self.clock.now_ms() - self.probe_ms
            self._wake()

    def _open(self) -> None:
        first = self._state is State.CLOSED
        self._state = State.OPEN
        self._opened_at = self.clock.now_ms()
        log.warning(
            "circuit.opened" if first else "circuit.reopened",
            circuit=self.name,
            consecutive_failures=self._count,
            probe_in_s=self.probe_ms / 1000,
        )
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def enter(self, *, give_up: Callable[[], bool] | None = None) -> bool | None:
        """Wait until a request may go out; True when the caller is the probe.

        A probe must end with :meth:`succeeded`, :meth:`failed` or
        :meth:`abandoned`. Returns None, without entering, once ``give_up()``
        is true while waiting.
        """
        while True:
            entry = self.try_enter()
            if entry is Entry.GO:
                return False
            if entry is Entry.PROBE:
                return True
            if give_up is not None and give_up():
                return None
            if self._changed is None:
                self._changed = anyio.Event()
            changed = self._changed
            wait_s = MAX_WAIT_S
            if self._state is State.OPEN:
                wait_s = min(max(self._due_in_ms(), 1) / 1000, MAX_WAIT_S)
            with anyio.move_on_after(wait_s):
                await changed.wait()
