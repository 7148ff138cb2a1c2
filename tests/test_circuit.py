"""The circuit breaker's states, on a clock moved by hand."""

from __future__ import annotations

import anyio
import pytest

from readdod.engines.circuit import CircuitBreaker, Entry, State
from readdod.runtime.clock import ManualClock

pytestmark = pytest.mark.anyio


def state(cb: CircuitBreaker) -> State:
    """Read afresh each time (mypy would otherwise keep an earlier narrowing)."""
    return cb.state


def test_consecutive_failures_open_it_and_a_probe_closes_it() -> None:
    clock = ManualClock()
    cb = CircuitBreaker(3, probe_s=10, clock=clock)
    cb.failed()
    cb.failed()
    cb.succeeded()  # an answer in between resets the count
    cb.failed()
    cb.failed()
    assert state(cb) is State.CLOSED and cb.try_enter() is Entry.GO
    cb.failed()
    assert state(cb) is State.OPEN and cb.try_enter() is Entry.WAIT
    clock.advance(9_999)
    assert cb.try_enter() is Entry.WAIT
    clock.advance(1)
    assert cb.try_enter() is Entry.PROBE
    assert state(cb) is State.HALF_OPEN
    assert cb.try_enter() is Entry.WAIT  # one probe at a time
    cb.failed()  # the probe failed: open for another probe_s
    assert state(cb) is State.OPEN and cb.try_enter() is Entry.WAIT
    clock.advance(10_000)
    assert cb.try_enter() is Entry.PROBE
    cb.succeeded()
    assert state(cb) is State.CLOSED and cb.try_enter() is Entry.GO
    assert cb.consecutive_failures == 0


def test_an_abandoned_probe_lets_the_next_waiter_probe_at_once() -> None:
    clock = ManualClock()
    cb = CircuitBreaker(1, probe_s=10, clock=clock)
    cb.failed()
    clock.advance(10_000)
    assert cb.try_enter() is Entry.PROBE
    cb.abandoned()
    assert state(cb) is State.OPEN and cb.try_enter() is Entry.PROBE


def test_zero_failures_disables_it() -> None:
    cb = CircuitBreaker(0, probe_s=1, clock=ManualClock())
    for _ in range(100):
        cb.failed()
    assert state(cb) is State.CLOSED


async def test_waiters_go_on_when_the_server_answers_again() -> None:
    cb = CircuitBreaker(1, probe_s=3600, clock=ManualClock())
    cb.failed()
    released: list[bool | None] = []

    async def waiter() -> None:
        released.append(await cb.enter())

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert released == []
        cb.succeeded()
    assert released == [False, False]


async def test_the_first_waiter_becomes_the_probe_when_it_is_due() -> None:
    clock = ManualClock()
    cb = CircuitBreaker(1, probe_s=0.001, clock=clock)
    cb.failed()
    clock.advance(1)
    assert await cb.enter() is True
    assert state(cb) is State.HALF_OPEN


async def test_a_waiter_gives_up_when_told_to() -> None:
    cb = CircuitBreaker(1, probe_s=3600, clock=ManualClock())
    cb.failed()
    stop = False

    async def stopper() -> None:
        nonlocal stop
        await anyio.wait_all_tasks_blocked()
        stop = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(stopper)
        assert await cb.enter(give_up=lambda: stop) is None
    assert state(cb) is State.OPEN
