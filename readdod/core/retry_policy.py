"""Retries across runs (DESIGN §5.2): when a failed item is queued again.

Pure: no I/O. The in-step retries (:mod:`readdod.runtime.retrying`) deal with a
hiccup within seconds; this policy deals with what outlasts a run, the
Cecelia table: a network failure is retried 3 times at 30 s, 60 s, 120 s, a
timeout once after 5 minutes, a rate limit when the provider says, a
worker lost to crashes once the daemon has run cleanly for a while, and a
failure that is not retryable never.
"""

from __future__ import annotations

from typing import Final, Literal

from readdod.errors import ErrorCode
from readdod.settings.config import RetryConfig, RetryRule

FailureClass = Literal["network", "timeout", "rate_limit", "provider", "schema", "worker_lost"]

CLASS_OF: Final[dict[str, FailureClass]] = {
    ErrorCode.EXTRACTION_FETCH_FAILED: "network",
    ErrorCode.AI_TIMEOUT: "timeout",
    ErrorCode.AI_RATE_LIMITED: "rate_limit",
    ErrorCode.AI_PROVIDER_ERROR: "provider",
    ErrorCode.AI_SCHEMA_INVALID: "schema",
    ErrorCode.AI_PARSE_ERROR: "schema",
    ErrorCode.WORKER_LOST: "worker_lost",
}


def failure_class(error_code: str) -> FailureClass | None:
    """The policy class of ``error_code``; None for failures never retried automatically."""
    return CLASS_OF.get(error_code)


def rule_for(cfg: RetryConfig, error_code: str) -> RetryRule | None:
    cls = failure_class(error_code)
    return getattr(cfg, cls) if cls is not None else None


def next_delay_s(
    cfg: RetryConfig,
    error_code: str,
    retryable: bool,
    retries_done: int,
    retry_after_s: float | None = None,
) -> float | None:
    """Seconds until the next automatic retry, or None when there is none.

    ``retries_done`` counts the automatic retries already made since the
    last success or user action.
    """
    rule = rule_for(cfg, error_code)
    if rule is None or retries_done >= rule.attempts:
        return None
    # A model's answer that does not parse or fit its schema is not retryable as it stands
    # (the same request may well get the same answer), so only ``[retry] schema``, which
    # is off unless set, retries it: the operator's choice, for a model that varies.
    if not retryable and failure_class(error_code) != "schema":
        return None
    if retry_after_s is not None and failure_class(error_code) == "rate_limit":
        return max(retry_after_s, 0.0)
    delay = rule.delays_s[min(retries_done, len(rule.delays_s) - 1)] if rule.delays_s else 0.0
    # Whoever asked us to wait (a site's Retry-After) is waited for at least.
    return max(delay, retry_after_s or 0.0)


def clean_run_due(cfg: RetryConfig, retries_done: int, clean_since_ms: int) -> int | None:
    """When a WORKER_LOST item may be queued again, the daemon having run cleanly since
    ``clean_since_ms`` (its start); None when the policy retries it no more.

    Its worker died with it, more than once, so the wait is counted from the
    daemon's start too, not only from the failure: a daemon that keeps dying
    never queues it again, one that has run ``delays_s[n]`` seconds does.
    """
    rule = cfg.worker_lost
    if retries_done >= rule.attempts:
        return None
    delay = rule.delays_s[min(retries_done, len(rule.delays_s) - 1)] if rule.delays_s else 0.0
    return clean_since_ms + int(delay * 1000)
