"""Runs and attempts: how a run starts, resumes, fails and finishes.

Shared by the commands (a person queues, retries, unarchives) and the lease
book (an actor's run ends): each function is one piece of a unit of work,
written once. A run is one attempt at making the item's card; each of its
executions is an attempt (DESIGN §2).
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from readdod import steps
from readdod.core import retry_policy
from readdod.core.unit import Work, dumps
from readdod.errors import ErrorCode, Spent, is_retryable
from readdod.items import urls
from readdod.items.models import Failure, UserScore, WireStep
from readdod.items.states import Status, Trigger
from readdod.runtime import ids
from readdod.runtime.clock import iso
from readdod.settings.config import RetryConfig
from readdod.steps import rubric
from readdod.store import AttemptRow, ItemRow, RunRow

S = Status
_score_decoder: Final = msgspec.json.Decoder(UserScore)


class RunPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What the daemon's configuration decides about runs."""

    #: Automatic retries across runs (``[retry]``).
    retry: RetryConfig = msgspec.field(default_factory=RetryConfig)
    #: READY items whose match score is below this are archived (SYSTEM_SKIP); 0: never.
    skip_below: int = 0
    #: Lost this many times in a row without finishing a step, an item fails (WORKER_LOST).
    max_orphanings: int = 3


def shown_run(row: ItemRow) -> str | None:
    """The run whose system artifacts the item shows: the one it is READY on, if any."""
    return row.ready_run_id or row.current_run_id


def score_fields(raw: str | None) -> tuple[str, int | None]:
    """(priority, match_score) an item takes from a score payload (none: P2, unscored)."""
    if raw is None:
        return "P2", None
    score = _score_decoder.decode(raw)
    return score.priority, score.match_score


def shown_score(work: Work, item_id: str, run_score: str | None) -> tuple[str, int | None]:
    """(priority, match_score) of the score a person sees: their own, else the run's."""
    mine = work.tx.user_version(item_id, "score")
    return score_fields(mine.payload if mine is not None else run_score)


def failed_state(step: str) -> Status:
    """Where a run that failed at ``step`` leaves its item (the gate: FAILED_AI)."""
    return steps.step(step).fails_as if step in steps.NAMES else S.FAILED_AI


next_step = steps.next_step


def failure(
    failed_step: WireStep,
    code: ErrorCode,
    message: str,
    retryable: bool,
    debug: str | None,
    now: int,
    *,
    attempts: int,
    due: int = 0,
    auto_retries: int = 0,
) -> Failure:
    """What ``items.failure`` says of a failed step (``failed_step`` its wire name): the
    one place a failure is made, for runs and exports alike."""
    return Failure(
        failed_step=failed_step,
        error_code=code,
        message=message,
        retryable=is_retryable(code, retryable),
        debug_message=debug,
        attempts=attempts,
        last_attempt_at=iso(now),
        next_attempt_at=iso(due) if due else None,
        auto_retries=auto_retries,
    )


def spent_detail(spent: Spent | None) -> dict[str, Any]:
    """A failed step's tokens as event detail: the keys an artifact's meta uses."""
    if spent is None:
        return {}
    out: dict[str, Any] = {
        "model": spent.model,
        "prompt_tokens": spent.prompt_tokens,
        "completion_tokens": spent.completion_tokens,
    }
    if spent.cached_tokens is not None:
        out["cached_tokens"] = spent.cached_tokens
    return out


def new_attempt(
    work: Work,
    run_id: str,
    item_id: str,
    mode: str,
    now: int,
) -> None:
    """A new execution of ``run_id``, queued: the supervisor's claim starts it."""
    work.tx.insert_attempt(
        AttemptRow(
            attempt_id=ids.ulid(now),
            run_id=run_id,
            item_id=item_id,
            mode=mode,
            status="queued",
            first_step=None,
            last_step=None,
            worker_id=None,
            error_code=None,
            error_message=None,
            created_at=now,
            started_at=None,
            finished_at=None,
        )
    )


def new_run(
    work: Work,
    item_id: str,
    mode: str,
    now: int,
    *,
    refetch: bool = False,
    run_id: str | None = None,
) -> str:
    """Insert a run with its first attempt, queued: the supervisor's claim starts it."""
    run_id = run_id or ids.ulid(now)
    work.tx.insert_run(
        RunRow(
            run_id=run_id,
            item_id=item_id,
            mode=mode,
            status="queued",
            refetch=int(refetch),
            current_step=steps.NAMES[0],
            attempts=0,
            worker_id=None,
            error_code=None,
            created_at=now,
            started_at=None,
            finished_at=None,
        )
    )
    new_attempt(work, run_id, item_id, mode, now)
    return run_id


def enqueue(
    work: Work,
    row: ItemRow,
    trigger: Trigger,
    now: int,
    *,
    new_run_mode: str | None,
    refetch: bool = False,
    detail: dict[str, Any] | None = None,
    auto_retries: int = 0,
) -> ItemRow:
    """Queue ``row``: on a new run of ``new_run_mode``, or resuming its current run.

    ``auto_retries`` is what the item's count of automatic retries becomes:
    0 for anything but the retry scheduler.
    """
    tx = work.tx
    if new_run_mode is not None or row.current_run_id is None:
        run_id = new_run(work, row.id, new_run_mode or "PROCESS", now, refetch=refetch)
    else:
        run_id = row.current_run_id
        tx.update_run(
            run_id, status="queued", error_code=None, error_message=None, finished_at=None
        )
        last = tx.last_attempt(run_id)
        if last is not None and last.status in ("queued", "running"):
            # Never expected (the item is not QUEUED or PROCESSING), but a run
            # must not have two attempts open.
            tx.end_attempt(run_id, "cancelled", now, error_message="superseded")
        # A run stopped before it could fail resumes; one that failed is retried, and its
        # failed chunks wait again as pending from now on (seed 004's retry-failed).
        resumed = last is not None and last.status == "cancelled"
        tx.retry_chunks(run_id, now)
        new_attempt(work, run_id, row.id, "RESUME" if resumed else "RETRY", now)
    return work.move(
        row,
        S.QUEUED,
        trigger,
        now=now,
        detail=detail,
        current_run_id=run_id,
        failure=None,
        archive_reason=None,
        next_attempt_at=0,
        lease_owner=None,
        lease_expires_at=None,
        auto_retries=auto_retries,
    )


def requeue(work: Work, row: ItemRow, reason: str, now: int) -> None:
    """PROCESSING → QUEUED keeping the run (a new attempt resumes it), lease cleared."""
    if row.current_run_id:
        work.tx.update_run(row.current_run_id, status="queued")
        work.tx.end_attempt(
            row.current_run_id, "cancelled", now, error_message=f"stopped ({reason})"
        )
        new_attempt(work, row.current_run_id, row.id, "RESUME", now)
    work.move(
        row,
        S.QUEUED,
        Trigger.SYSTEM,
        now=now,
        detail={"reason": reason},
        lease_owner=None,
        lease_expires_at=None,
    )


def passes_gate(work: Work, item_id: str, run_id: str) -> bool:
    code, _ = rubric.gate(run_id, work.tx.run_payloads(item_id, run_id, steps.GATED))
    return code is None


def complete_run(work: Work, row: ItemRow) -> str | None:
    """The newest run whose artifacts pass the READY gate, the current one first."""
    candidates = [row.current_run_id] if row.current_run_id else []
    candidates += [r.run_id for r in reversed(work.tx.runs_for(row.id))]
    for run_id in dict.fromkeys(candidates):
        if passes_gate(work, row.id, run_id):
            return run_id
    return None


def fail(
    work: Work,
    policy: RunPolicy,
    row: ItemRow,
    step: str,
    code: ErrorCode,
    message: str,
    retryable: bool,
    debug: str | None,
    now: int,
    *,
    retry_after: float | None = None,
    timed_out: bool = False,
    at_fault: str | None = None,
    spent: Spent | None = None,
    **fields: Any,
) -> ItemRow:
    """``step`` failed: FAILED_EXTRACTION or FAILED_AI, with ``items.failure`` set.

    ``spent``, the tokens the failed step had cost, goes into the failure's
    event, where the run's totals and ``stats`` count it with the artifacts'.

    ``retryable`` is the error's own judgement, which the automatic retry
    policy follows; the failure's ``retryable`` is the code's where the
    code decides (:func:`readdod.errors.is_retryable`). ``failed_step`` is the wire name of
    ``at_fault`` if given (the step whose artifact the gate rejected), else
    of ``step``.
    """
    tx = work.tx
    # A fetch failure quotes the address; what is kept and shown keeps no credentials.
    message = urls.redact_credentials(message)
    debug = urls.redact_credentials(debug) if debug is not None else None
    run = tx.run(row.current_run_id) if row.current_run_id else None
    delay = retry_policy.next_delay_s(policy.retry, code, retryable, row.auto_retries, retry_after)
    due = now + max(int(delay * 1000), 1) if delay is not None else 0
    made = failure(
        steps.wire_step(at_fault or step),
        code,
        message,
        retryable,
        debug,
        now,
        attempts=run.attempts if run else 1,
        due=due,
        auto_retries=row.auto_retries,
    )
    if run is not None:
        # Seed 002: a run that ran out of time ends ``timeout``, as its attempt does.
        tx.update_run(
            run.run_id,
            status="timeout" if timed_out else "failed",
            error_code=code,
            error_message=message[:1000],
            finished_at=now,
        )
        tx.end_attempt(
            run.run_id,
            "timeout" if timed_out else "failed",
            now,
            error_code=code,
            error_message=message[:1000],
        )
    moved = work.move(
        row,
        failed_state(step),
        Trigger.SYSTEM,
        now=now,
        detail={
            "step": step,
            "error_code": code,
            "message": message[:500],
            "next_attempt_at": iso(due) if due else None,
            **spent_detail(spent),
        },
        failure=dumps(made),
        lease_owner=None,
        lease_expires_at=None,
        next_attempt_at=due,
        **fields,
    )
    if due:
        work.note(
            "retry.scheduled",
            item_id=row.id,
            run_id=row.current_run_id,
            error_code=code,
            retry=row.auto_retries + 1,
            delay_s=round(delay or 0.0, 3),
        )
    return moved


def finish(work: Work, policy: RunPolicy, row: ItemRow, run_id: str, now: int) -> ItemRow:
    """Gate a run whose steps are all done: READY (maybe auto-archived) or FAILED_AI."""
    tx = work.tx
    payloads, my_score = tx.gate_inputs(row.id, run_id, steps.GATED)
    code, problems = rubric.gate(run_id, payloads)
    if code is not None:
        return fail(
            work,
            policy,
            row,
            "gate",
            ErrorCode(code),
            "the generated card did not pass the quality gate: " + "; ".join(problems),
            False,
            None,
            now,
            at_fault=rubric.gate_fault(run_id, payloads),
        )
    # The attempt first: its last step is the run's current one, which the run then clears.
    tx.end_attempt(run_id, "succeeded", now)
    tx.update_run(run_id, status="succeeded", finished_at=now, current_step=None)
    priority, match = score_fields(my_score or payloads["score"][1])
    ready = work.move(
        row,
        S.READY,
        Trigger.SYSTEM,
        now=now,
        lease_owner=None,
        lease_expires_at=None,
        orphan_count=0,
        auto_retries=0,
        ready_run_id=run_id,
        priority=priority,
        match_score=match,
    )
    return _auto_skip(work, policy, ready, now)


def _auto_skip(work: Work, policy: RunPolicy, row: ItemRow, now: int) -> ItemRow:
    """READY → ARCHIVED (SYSTEM_SKIP) when the score a person sees is below skip_below."""
    if policy.skip_below <= 0 or row.match_score is None:
        return row
    match = row.match_score
    if match >= policy.skip_below:
        return row
    return work.move(
        row,
        S.ARCHIVED,
        Trigger.SYSTEM,
        now=now,
        detail={"reason": "SYSTEM_SKIP", "match_score": match, "skip_below": policy.skip_below},
        archive_reason="SYSTEM_SKIP",
    )
