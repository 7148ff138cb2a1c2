"""Retries inside a step (DESIGN §5.1), on top of stamina.

A step (or one chunk of it) that hits a retryable :class:`StepError` — a
timeout, a 429, a 5xx, a reset connection — is tried again with exponential
backoff and jitter, honouring the server's ``Retry-After``. Before each wait
the caller's ``on_retry`` hook is told, so the core can record the
``retrying`` state and people watching see why an item is slow. After the
last attempt the error goes up unchanged and the step fails with its code.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import msgspec
import stamina
import stamina.instrumentation

from readdod.errors import StepError

T = TypeVar("T")

#: Called before each wait: (attempt that failed, its error, seconds to wait).
OnRetry = Callable[[int, StepError, float], Awaitable[None]]
#: Called when a retry starts, after the wait: (the attempt starting, from 2).
OnAttempt = Callable[[int], Awaitable[None]]

# readdod logs its own ``step.retrying`` events (documented in the log
# schema); stamina's default structlog/prometheus hooks would add a second,
# undocumented line per retry.
stamina.instrumentation.set_on_retry_hooks([])


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How often and how patiently one step retries."""

    attempts: int = 3
    initial_s: float = 1.0
    max_s: float = 30.0
    jitter_s: float = 1.0
    #: A ``Retry-After`` longer than this is not waited for inside the step.
    max_retry_after_s: float = 120.0


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds a server asks us to wait: ``retry-after-ms``, or ``Retry-After``
    as seconds or an HTTP date; None when it says nothing usable."""
    raw = headers.get("retry-after-ms")
    if raw:
        try:
            return max(float(raw) / 1000, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    # A date without a zone is taken as UTC, as HTTP dates are.
    return max(when.timestamp() - time.time(), 0.0)


def _backoff(policy: RetryPolicy) -> Callable[[Exception], bool | float]:
    def hook(exc: Exception) -> bool | float:
        if not isinstance(exc, StepError) or not exc.retryable:
            return False
        if exc.retry_after is not None:
            if exc.retry_after > policy.max_retry_after_s:
                return False
            return max(exc.retry_after, 0.0)
        return True

    return hook


def _planned_wait(policy: RetryPolicy, failed_attempt: int, exc: StepError) -> float:
    if exc.retry_after is not None:
        return max(exc.retry_after, 0.0)
    return float(min(policy.initial_s * 2 ** (failed_attempt - 1), policy.max_s))


async def call(
    fn: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    on_retry: OnRetry | None = None,
    on_attempt: OnAttempt | None = None,
) -> T:
    """Await ``fn()`` until it succeeds, fails for good, or attempts run out.

    ``on_retry`` is told before each wait, ``on_attempt`` when the next
    attempt starts after it.
    """
    hook = _backoff(policy)
    async for attempt in stamina.retry_context(
        on=hook,
        attempts=max(policy.attempts, 1),
        timeout=None,
        wait_initial=policy.initial_s,
        wait_max=policy.max_s,
        wait_jitter=policy.jitter_s,
    ):
        with attempt:
            if on_attempt is not None and attempt.num > 1:
                await on_attempt(attempt.num)
            try:
                return await fn()
            except StepError as exc:
                if (
                    on_retry is not None
                    and attempt.num < policy.attempts
                    and hook(exc) is not False
                ):
                    await on_retry(attempt.num, exc, _planned_wait(policy, attempt.num, exc))
                raise
    raise AssertionError("unreachable: stamina either returns or raises")
