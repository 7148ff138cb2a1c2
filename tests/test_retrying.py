"""In-step retries: backoff, Retry-After, the retrying hook, and giving up."""

from __future__ import annotations

import email.utils
import time

import pytest

from readdod.errors import AIError, ErrorCode, StepError
from readdod.runtime.retrying import RetryPolicy, call, retry_after_s

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(attempts=3, initial_s=0.001, max_s=0.002, jitter_s=0.0)


class Flaky:
    def __init__(self, failures: list[StepError]) -> None:
        self.failures = failures
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


async def test_retryable_errors_are_retried_and_reported() -> None:
    seen: list[tuple[int, str, float]] = []

    async def on_retry(attempt: int, err: StepError, delay: float) -> None:
        seen.append((attempt, err.error_code, delay))

    fn = Flaky([AIError("503", retryable=True), AIError("503", retryable=True)])
    assert await call(fn, FAST, on_retry) == "ok"
    assert fn.calls == 3
    assert [(a, c) for a, c, _ in seen] == [(1, "AI_PROVIDER_ERROR"), (2, "AI_PROVIDER_ERROR")]


async def test_gives_up_after_the_last_attempt_with_the_typed_error() -> None:
    seen: list[int] = []

    async def on_retry(attempt: int, err: StepError, delay: float) -> None:
        seen.append(attempt)

    fn = Flaky([AIError("t", code=ErrorCode.AI_TIMEOUT, retryable=True)] * 5)
    with pytest.raises(AIError) as info:
        await call(fn, FAST, on_retry)
    assert info.value.error_code == "AI_TIMEOUT"
    assert fn.calls == 3
    assert seen == [1, 2]  # no "retrying" announced for an attempt that never comes


async def test_non_retryable_errors_fail_at_once() -> None:
    fn = Flaky([AIError("bad schema", code=ErrorCode.AI_SCHEMA_INVALID, retryable=False)])
    with pytest.raises(AIError):
        await call(fn, FAST)
    assert fn.calls == 1


async def test_retry_after_sets_the_wait_and_a_long_one_is_not_waited_for() -> None:
    delays: list[float] = []

    async def on_retry(attempt: int, err: StepError, delay: float) -> None:
        delays.append(delay)

    policy = RetryPolicy(
        attempts=2, initial_s=0.001, max_s=0.002, jitter_s=0.0, max_retry_after_s=0.01
    )
    fn = Flaky([AIError("429", code=ErrorCode.AI_RATE_LIMITED, retryable=True, retry_after=0.005)])
    assert await call(fn, policy, on_retry) == "ok"
    assert delays == [0.005]

    too_long = Flaky([AIError("429", retryable=True, retry_after=3600)])
    with pytest.raises(AIError):
        await call(too_long, policy, on_retry)
    assert too_long.calls == 1


def test_retry_after_in_seconds_milliseconds_or_a_date() -> None:
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "3"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    waited = retry_after_s({"retry-after": later})
    assert waited is not None and 25 < waited <= 31
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None
