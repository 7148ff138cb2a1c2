"""Retries across runs (DESIGN §5.2): the policy table, next_attempt_at, the
scheduler that queues due items by itself. A real SQLite file and a clock
moved by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec
import pytest

from readdod.core import Core, retry_policy
from readdod.errors import AIError, ErrorCode, ExtractionError, StepError
from readdod.items.models import ArtifactMeta, CaptureRequest, Extraction
from readdod.loops.retry import RetryScheduler
from readdod.runtime.clock import ManualClock
from readdod.settings.config import RetryConfig, RetryRule
from readdod.store import SqliteStore

pytestmark = pytest.mark.anyio

enc = msgspec.json.encode
SUMMARY = {
    "tl_dr": "t",
    "key_points": ["a", "b", "c"],
    "intent_relevance": "r",
    "reading_time_min": 1,
}
NETWORK = ExtractionError(
    "the server hung up", code=ErrorCode.EXTRACTION_FETCH_FAILED, retryable=True
)


@pytest.fixture
async def orch(tmp_path: Path) -> AsyncIterator[Core]:
    async with SqliteStore.open(tmp_path / "t.db") as store:
        yield Core(store, ManualClock(), max_orphanings=3)


def _clock(o: Core) -> ManualClock:
    assert isinstance(o.clock, ManualClock)
    return o.clock


async def _capture(o: Core, intent: str = "x") -> str:
    item, _ = await o.commands.capture(CaptureRequest(intent=intent, text="body"))
    return item.id


async def _fail_next(o: Core, step: str, error: StepError) -> str:
    """Claim the next queued item and fail it at ``step``."""
    [claimed] = await o.leases.claim("w", 1, 30_000)
    assert await o.book.fail(claimed.lease, step, error) is not None
    return claimed.lease.run_id


@pytest.mark.parametrize(
    ("code", "retryable", "done", "retry_after", "expected"),
    [
        (ErrorCode.EXTRACTION_FETCH_FAILED, True, 0, None, 30.0),
        (ErrorCode.EXTRACTION_FETCH_FAILED, True, 1, None, 60.0),
        (ErrorCode.EXTRACTION_FETCH_FAILED, True, 2, None, 120.0),
        (ErrorCode.EXTRACTION_FETCH_FAILED, True, 3, None, None),
        (ErrorCode.EXTRACTION_FETCH_FAILED, True, 0, 500.0, 500.0),
        (ErrorCode.EXTRACTION_FETCH_FAILED, True, 0, 5.0, 30.0),
        (ErrorCode.EXTRACTION_FETCH_FAILED, False, 0, None, None),
        (ErrorCode.AI_TIMEOUT, True, 0, None, 300.0),
        (ErrorCode.AI_TIMEOUT, True, 1, None, None),
        (ErrorCode.AI_RATE_LIMITED, True, 0, 7.5, 7.5),
        (ErrorCode.AI_RATE_LIMITED, True, 0, None, 60.0),
        (ErrorCode.AI_PROVIDER_ERROR, True, 2, None, 120.0),
        (ErrorCode.AI_SCHEMA_INVALID, True, 0, None, None),
        # Once, after a clean run of the daemon (the scheduler holds it until then).
        (ErrorCode.WORKER_LOST, True, 0, None, 600.0),
        (ErrorCode.WORKER_LOST, True, 1, None, None),
        (ErrorCode.EXTRACTION_EMPTY, False, 0, None, None),
    ],
)
def test_default_policy_follows_the_seed_table(
    code: ErrorCode, retryable: bool, done: int, retry_after: float | None, expected: float | None
) -> None:
    got = retry_policy.next_delay_s(RetryConfig(), code, retryable, done, retry_after)
    assert got == expected


def test_schema_failures_are_retried_only_when_the_schema_rule_says_so() -> None:
    code = ErrorCode.AI_SCHEMA_INVALID
    assert retry_policy.next_delay_s(RetryConfig(), code, False, 0) is None  # off by default
    cfg = RetryConfig(schema=RetryRule(attempts=2, delays_s=(10.0,)))
    # The error itself says "not retryable as it stands"; the operator's rule wins.
    delays = [retry_policy.next_delay_s(cfg, code, False, n) for n in range(3)]
    assert delays == [10.0, 10.0, None]
    assert retry_policy.next_delay_s(cfg, ErrorCode.AI_PARSE_ERROR, False, 0) == 10.0
    # Other classes still follow the error's own judgement.
    assert retry_policy.next_delay_s(cfg, ErrorCode.AI_PROVIDER_ERROR, False, 0) is None


def test_the_last_delay_repeats() -> None:
    cfg = RetryConfig(network=RetryRule(attempts=5, delays_s=(1.0, 2.0)))
    delays = [retry_policy.next_delay_s(cfg, "EXTRACTION_FETCH_FAILED", True, n) for n in range(6)]
    assert delays == [1.0, 2.0, 2.0, 2.0, 2.0, None]


async def test_network_failures_are_retried_three_times_then_stay_failed(
    orch: Core,
) -> None:
    clock = _clock(orch)
    item_id = await _capture(orch)
    run_id = await _fail_next(orch, "extraction", NETWORK)
    for n, delay_s in enumerate([30, 60, 120], start=1):
        item = (await orch.reads.get(item_id))["item"]
        assert item.status == "FAILED_EXTRACTION"
        assert item.failure is not None and item.failure.next_attempt_at is not None
        assert item.failure.auto_retries == n - 1
        # Not yet due: one millisecond short of the delay.
        clock.advance(delay_s * 1000 - 1)
        queued, next_due = await orch.commands.requeue_due()
        assert queued == [] and next_due == clock.now_ms() + 1
        clock.advance(1)
        queued, next_due = await orch.commands.requeue_due()
        assert queued == [item_id] and next_due is None
        got = await orch.reads.get(item_id, history=True)
        assert got["item"].status == "QUEUED"
        auto = [e for e in got["events"] if e.detail.get("op") == "auto_retry"]
        assert auto[-1].trigger == "system" and auto[-1].detail["retry"] == n
        # A retry resumes the same run: finished steps are not paid for twice.
        assert await _fail_next(orch, "extraction", NETWORK) == run_id
    item = (await orch.reads.get(item_id))["item"]
    assert item.failure is not None
    assert item.failure.next_attempt_at is None and item.failure.auto_retries == 3
    clock.advance(3_600_000)
    assert await orch.commands.requeue_due() == ([], None)
    runs = (await orch.reads.get(item_id))["runs"]
    assert len(runs) == 1 and runs[0].attempts == 4

    # A person's `process` starts the count again.
    await orch.commands.process(item_id)
    await _fail_next(orch, "extraction", NETWORK)
    item = (await orch.reads.get(item_id))["item"]
    assert item.failure is not None and item.failure.auto_retries == 0
    assert item.failure.next_attempt_at is not None


async def test_an_archived_failure_is_not_retried_and_does_not_say_it_will(
    orch: Core,
) -> None:
    clock = _clock(orch)
    item_id = await _capture(orch)
    await _fail_next(orch, "extraction", NETWORK)
    item = (await orch.reads.get(item_id))["item"]
    assert item.failure is not None and item.failure.next_attempt_at is not None
    archived, _ = await orch.commands.archive(item_id)
    assert archived.status == "ARCHIVED" and archived.archive_reason == "FAILURE_ARCHIVE"
    # Why it failed is kept; a retry that will not happen is not promised.
    assert archived.failure is not None
    assert archived.failure.error_code == "EXTRACTION_FETCH_FAILED"
    assert archived.failure.next_attempt_at is None
    clock.advance(3_600_000)
    assert await orch.commands.requeue_due() == ([], None)
    assert (await orch.reads.get(item_id))["item"].status == "ARCHIVED"


async def test_rate_limit_waits_as_long_as_the_provider_asks(orch: Core) -> None:
    clock = _clock(orch)
    item_id = await _capture(orch)
    start = clock.now_ms()
    limited = AIError("slow down", code=ErrorCode.AI_RATE_LIMITED, retryable=True, retry_after=7)
    await _fail_next(orch, "summary", limited)
    queued, next_due = await orch.commands.requeue_due()
    assert queued == [] and next_due == start + 7_000
    clock.advance(7_000)
    assert (await orch.commands.requeue_due())[0] == [item_id]


async def test_non_retryable_failures_are_never_retried(orch: Core) -> None:
    clock = _clock(orch)
    item_id = await _capture(orch)
    empty = ExtractionError("no text", code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
    await _fail_next(orch, "extraction", empty)
    item = (await orch.reads.get(item_id))["item"]
    assert item.failure is not None and item.failure.next_attempt_at is None
    clock.advance(24 * 3_600_000)
    assert await orch.commands.requeue_due() == ([], None)
    assert (await orch.reads.get(item_id))["item"].status == "FAILED_EXTRACTION"


async def test_retry_failed_by_step_and_dry_run(orch: Core) -> None:
    a = await _capture(orch, "a")
    await _fail_next(orch, "extraction", NETWORK)
    b = await _capture(orch, "b")
    schema = AIError("bad", code=ErrorCode.AI_SCHEMA_INVALID, retryable=False)
    await _fail_next(orch, "todos", schema)
    assert sorted(await orch.commands.retry_failed(dry_run=True)) == sorted([a, b])
    assert (await orch.reads.get(a))["item"].status == "FAILED_EXTRACTION"
    assert await orch.commands.retry_failed(step="todos") == [b]
    assert (await orch.reads.get(b))["item"].status == "QUEUED"
    assert (await orch.reads.get(a))["item"].status == "FAILED_EXTRACTION"
    assert await orch.commands.retry_failed() == [a]
    assert await orch.commands.retry_failed() == []


async def test_scheduler_queues_due_items_by_itself(orch: Core) -> None:
    clock = _clock(orch)
    scheduler = RetryScheduler(orch.commands, clock, max_sleep_s=30.0)
    queued = anyio.Event()
    orch.units.on_enqueue(lambda: queued.set())
    item_id = await _capture(orch)
    async with anyio.create_task_group() as tg:
        await tg.start(scheduler.run)
        queued = anyio.Event()
        await _fail_next(orch, "extraction", NETWORK)
        # The failure woke the scheduler; it found nothing due and sleeps until
        # the due time by the injected clock (30 s), not in a polling loop.
        with anyio.fail_after(5):
            while scheduler.passes < 2:
                await anyio.sleep(0.01)
        passes = scheduler.passes
        due = (await orch.commands.requeue_due())[1]
        assert due is not None and scheduler.sleep_for(due) == 30.0
        await anyio.sleep(0.2)
        assert scheduler.passes == passes
        assert (await orch.reads.get(item_id))["item"].status == "FAILED_EXTRACTION"
        clock.advance(30_000)
        scheduler.wake()
        with anyio.fail_after(5):
            await queued.wait()
        assert (await orch.reads.get(item_id))["item"].status == "QUEUED"
        tg.cancel_scope.cancel()


async def test_the_ledger_keeps_models_tokens_and_every_failed_attempt(
    orch: Core,
) -> None:
    item_id = await _capture(orch)
    run_id = await _fail_next(orch, "extraction", NETWORK)
    _clock(orch).advance(30_000)
    await orch.commands.requeue_due()
    [claimed] = await orch.leases.claim("w", 1, 30_000)
    ext = Extraction(text="body", source="provided_text", extractor="t")
    meta = ArtifactMeta(run_id=None, model="m-1", prompt_tokens=11, completion_tokens=4)
    assert await orch.book.put_artifact(claimed.lease, "extraction", enc(ext), meta) == 1
    summary_meta = ArtifactMeta(run_id=None, model="m-2", prompt_tokens=5, completion_tokens=2)
    timeout = AIError("no answer", code=ErrorCode.AI_TIMEOUT, retryable=True)
    assert await orch.book.put_artifact(claimed.lease, "summary", enc(SUMMARY), summary_meta) == 1
    await orch.book.fail(claimed.lease, "score", timeout)
    [run] = (await orch.reads.get(item_id))["runs"]
    # Its last attempt timed out: so did the run.
    assert run.run_id == run_id and run.attempts == 2 and run.status == "timeout"
    assert run.steps_done == ["extraction", "summary"]
    assert run.models == ["m-1", "m-2"]
    assert (run.prompt_tokens, run.completion_tokens) == (16, 6)
    assert [(f.step, f.error_code) for f in run.failures] == [
        ("extraction", "EXTRACTION_FETCH_FAILED"),
        ("score", "AI_TIMEOUT"),
    ]
    assert run.error_code == "AI_TIMEOUT" and run.error_message == "no answer"
