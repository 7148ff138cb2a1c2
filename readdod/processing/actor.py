"""One item's run under its lease.

The actor walks the steps in order, skipping those whose artifact for this
run already exists (a crash never re-pays for finished work), and hands each
result to the core's lease book. It stops at a step boundary when the supervisor
asks (a shutdown's drain) and, when cancelled (a pause, ``archive --cancel``,
the end of the drain), returns the item to QUEUED in a shielded scope before
letting the cancellation go on.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from readdod.core.book import LeaseBook
from readdod.core.intake import document_of
from readdod.core.leases import Claimed
from readdod.engines.base import StepHooks, StepStopped
from readdod.errors import ErrorCode, ShuttingDown, StepError, StoreBusy, StoreWriteFailed
from readdod.processing.pipeline import Pipeline, decode_payload
from readdod.runtime import faults
from readdod.runtime.events import EventSink
from readdod.runtime.logging import get_logger
from readdod.steps import STEPS, StepContext
from readdod.steps.base import Source

log = get_logger("readdod.actor")
_enc = msgspec.json.Encoder()

#: How long a shielded cleanup write may take before it is abandoned.
CLEANUP_TIMEOUT_S = 10.0


async def run(
    claimed: Claimed,
    book: LeaseBook,
    events: EventSink,
    pipeline: Pipeline,
    stop_reason: Callable[[], str | None],
    cleanup_s: Callable[[float], float] = lambda default_s: default_s,
) -> None:
    """Run ``claimed`` to READY/FAILED_*, or back to QUEUED if told to stop.

    ``cleanup_s(CLEANUP_TIMEOUT_S)``: how long a shielded cleanup write may take now
    (less once a stop's grace runs out: a database that went away must not hold it)."""
    lease = claimed.lease
    item = claimed.item
    step = STEPS[0].name
    bound = log.bind(item_id=item.id, run_id=lease.run_id, worker_id=lease.owner)
    try:

        async def on_retry(attempt: int, error: StepError, delay_s: float) -> None:
            await book.note_retry(lease, step, attempt, error, delay_s)

        async def note(event: str, detail: dict[str, Any]) -> None:
            await book.note_step(lease, step, event, detail)

        async def source() -> Source:
            html, text, document = claimed.source or await book.source(item.id)
            return html, text, document_of(document)

        ctx = StepContext(
            item_id=item.id,
            url=item.url,
            intent=item.intent_text,
            title=item.title,
            tags=tuple(msgspec.json.decode(item.tags, type=list[str])),
            done={k: decode_payload(k, a.payload) for k, a in claimed.done.items()},
            captured_at=item.created_at,
            hooks=StepHooks(
                on_retry=on_retry,
                note=note,
                chunks=book.chunks(lease, orphaned=item.orphan_count > 0),
                stop_reason=stop_reason,
                reported=functools.partial(book.reported, lease),
            ),
            source=source,
        )
        finished = False
        for each in STEPS:
            step = each.name
            if step in ctx.done:
                continue
            reason = stop_reason()
            if reason is not None:
                with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
                    await book.release(lease, reason)
                return
            if (
                each.reused_on_regenerate
                and claimed.run_mode == "REGENERATE"
                and not claimed.refetch
            ):
                newest = await book.latest(item.id, step)
                if newest is not None:
                    ctx.done[step] = decode_payload(step, newest.payload)
                    continue
            started = time.perf_counter()
            bound.info("step.started", step=step)
            events.publish("step.started", item.id, lease.run_id, step=step)
            faults.crash_point(f"step:{step}")
            result = await pipeline.run(each, ctx)
            version = await book.put_artifact(
                lease,
                step,
                _enc.encode(result.payload),
                result.meta,
                item_fields=result.item_fields,
                duration_ms=(time.perf_counter() - started) * 1000,
                finish=each is STEPS[-1],
            )
            if version is None:
                return
            finished = each is STEPS[-1]
            ctx.done[step] = result.payload
            if "title" in result.item_fields:
                ctx.title = result.item_fields["title"]
        if not finished:
            step = "gate"
            with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
                await book.complete(lease)
    except StepError as exc:
        bound.warning("step.failed", step=step, error_code=exc.error_code, error=exc.message)
        events.publish("step.failed", item.id, lease.run_id, step=step, error_code=exc.error_code)
        with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
            await book.fail(lease, step, exc)
    except StepStopped as stopped:
        # The step was waiting for a model server that is down; the item waits QUEUED instead.
        with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
            await book.release(lease, stopped.reason)
    except anyio.get_cancelled_exc_class():
        with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
            await book.release(lease, stop_reason() or "cancelled")
        raise
    except (StoreBusy, StoreWriteFailed, ShuttingDown) as exc:
        # The database failed, not the item: it waits QUEUED and resumes this run. Should
        # the release fail too, the lease runs out and the item is requeued all the same.
        bound.warning(
            "step.waiting",
            step=step,
            reason=exc.error_code.lower(),
            error_code=exc.error_code,
            message=exc.message,
        )
        with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
            await book.release(lease, exc.error_code.lower())
    except Exception as exc:
        bound.exception("step.crashed", step=step, error_code=ErrorCode.INTERNAL_ERROR)
        err = StepError(
            f"readdod hit an internal error in step {step} ({type(exc).__name__}: {exc});"
            " please report it. The item can be retried with `readdod process`.",
            code=ErrorCode.INTERNAL_ERROR,
            retryable=False,
            debug=repr(exc),
        )
        with anyio.move_on_after(cleanup_s(CLEANUP_TIMEOUT_S), shield=True):
            await book.fail(lease, step, err)
