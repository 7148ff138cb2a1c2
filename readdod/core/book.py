"""What an actor writes under its lease: the lease book.

Every write here is fenced by the lease: its owner, its run and the fencing
token of its claim (the item's ``lease_token``, one more at every claim). A
worker that lost its lease (it expired, the item was cancelled or claimed
again, by another daemon or by this one after the lease ran out, the daemon
restarted) writes nothing, and learns so from the answer. The actor never writes a status: it
hands over a step's artifact, a retry, a failure or the end of its run, and
the book records what that means for the item (:mod:`readdod.core.runs`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from readdod.core import runs
from readdod.core.leases import Lease
from readdod.core.runs import RunPolicy, fail, next_step, requeue
from readdod.core.unit import Units, Work, dumps
from readdod.errors import Spent, StepError
from readdod.items import urls
from readdod.items.models import CHUNK_ACTIVE, ArtifactMeta, Item
from readdod.items.states import Trigger
from readdod.runtime import faults
from readdod.runtime.clock import iso
from readdod.steps import GATED
from readdod.store import ArtifactRow, ItemRow
from readdod.store.api import StepSlot, UnitOfWork
from readdod.wire.views import item_view


def _holds(work: Work, lease: Lease, step: str) -> bool:
    """Whether ``lease`` still holds its item: owner, run and the claim's fencing token.

    A refused write is noted as ``lease.lost`` whatever it was, so every late
    write of an actor whose item was claimed again shows in the log and metrics.
    """
    if work.tx.holds_lease(lease.item_id, lease.owner, lease.run_id, token=lease.token):
        return True
    _refused(work, lease, step)
    return False


def _refused(work: Work, lease: Lease, step: str) -> None:
    work.note(
        "lease.lost", item_id=lease.item_id, run_id=lease.run_id, step=step, worker_id=lease.owner
    )


class LeaseChunks:
    """A run's chunk ledger for an engine, written through the book under the lease.

    ``orphaned``: the item was claimed with a crash count (its worker was lost
    before without finishing a step). Its first finished chunk is progress and
    clears that count, as a finished step does: a long text that gets further
    at every start is not the item that kills its worker.
    """

    def __init__(self, book: LeaseBook, lease: Lease, *, orphaned: bool = False) -> None:
        self.book = book
        self.lease = lease
        self.orphaned = orphaned

    async def begin(self, step: str, total: int, model: str | None) -> dict[int, str]:
        return await self.book.chunks_begin(self.lease, step, total, model)

    async def update(
        self,
        step: str,
        idx: int,
        status: str,
        *,
        error: StepError | None = None,
        output: str | None = None,
        model: str | None = None,
        spent: Spent | None = None,
    ) -> None:
        progress = status == "done" and self.orphaned
        written = await self.book.chunk_update(
            self.lease,
            step,
            idx,
            status,
            error=error,
            output=output,
            model=model,
            spent=spent,
            progress=progress,
        )
        if progress and written:
            self.orphaned = False
        if status == "done":
            faults.crash_point(f"chunk:{step}:{idx}")


class LeaseBook:
    """An actor's writes, each fenced by its lease."""

    def __init__(self, units: Units, policy: RunPolicy) -> None:
        self.units = units
        self.clock = units.clock
        self.policy = policy
        #: Tokens an attempt's chunks counted already (by item and claim): the step's
        #: artifact or failure counts only the rest of what the step reports.
        self._counted: dict[tuple[str, int | None], tuple[int, int, int]] = {}
        #: The steps an attempt mapped over chunks (by item and claim).
        self._chunked: dict[tuple[str, int | None], set[str]] = {}
        #: Tokens the model server reported for the running step's answers (by item and
        #: claim): what a step cut short (pause, cancel, stop) counts as it is released.
        self._reported: dict[tuple[str, int | None], tuple[int, int, int]] = {}

    def reported(self, lease: Lease, spent: Spent) -> None:
        """The server reported ``spent`` for an answer to ``lease``'s running step."""
        key = (lease.item_id, lease.token)
        p, c, k = self._reported.get(key, (0, 0, 0))
        self._reported[key] = (
            p + spent.prompt_tokens,
            c + spent.completion_tokens,
            k + (spent.cached_tokens or 0),
        )

    def _fresh(self, lease: Lease, prompt: int, completion: int, cached: int) -> tuple[int, ...]:
        """What a step reported that its chunks did not count already (and forget those,
        and the answers reported so far: the step's artifact or failure counts them)."""
        self._reported.pop((lease.item_id, lease.token), None)
        counted = self._counted.pop((lease.item_id, lease.token), (0, 0, 0))
        return tuple(
            max(v - c, 0) for v, c in zip((prompt, completion, cached), counted, strict=True)
        )

    def chunks(self, lease: Lease, *, orphaned: bool = False) -> LeaseChunks:
        """The chunk ledger of ``lease``'s run, for the engine's long-text steps
        (``orphaned``: the item was claimed with a crash count to clear on progress)."""
        return LeaseChunks(self, lease, orphaned=orphaned)

    async def source(self, item_id: str) -> tuple[str | None, str | None, str | None]:
        """The captured (html, text, document) of an item, read when the claim did not
        carry it."""

        def read(tx: UnitOfWork) -> tuple[str | None, str | None, str | None]:
            html, text = tx.source(item_id)
            return html, text, tx.source_document(item_id) if text is not None else None

        return await self.units.read(read)

    async def latest(self, item_id: str, step: str) -> ArtifactRow | None:
        """The newest artifact of ``step`` (a regenerate that does not refetch reuses it)."""
        return await self.units.read(lambda tx: tx.latest_artifact(item_id, step))

    async def put_artifact(
        self,
        lease: Lease,
        step: str,
        payload: bytes,
        meta: ArtifactMeta,
        *,
        item_fields: dict[str, Any] | None = None,
        duration_ms: float | None = None,
        finish: bool = False,
    ) -> int | None:
        """Commit one step's artifact for the lease's run; None if the lease is gone.

        ``duration_ms`` (the step's own time) goes into the step event for
        ``stats`` and the ``step.finished`` line. ``finish`` also runs the
        READY gate in the same transaction: the last step and the run's
        outcome commit together, one transaction fewer per item.

        The item row is written only when something on it changes (title,
        priority, score, a crash-loop count to clear); otherwise the read that
        checks the lease is all it costs.
        """

        fresh = self._fresh(
            lease, meta.prompt_tokens or 0, meta.completion_tokens or 0, meta.cached_tokens or 0
        )
        chunked = step in self._chunked.pop((lease.item_id, lease.token), set())

        def unit(work: Work) -> int | None:
            now = self.clock.now_ms()
            held, newest, version = _hold(work, lease, step, item_fields, now)
            if not held:
                _refused(work, lease, step)
                return None
            if version is None:
                version = newest + 1
                work.tx.spend(lease.run_id, *fresh)
                full = _with_chunks(work, lease, step, meta, fresh) if chunked else meta
                _write_step(work, lease, step, version, payload, full, now, duration_ms, finish)
            work.note(
                "step.finished",
                item_id=lease.item_id,
                run_id=lease.run_id,
                worker_id=lease.owner,
                step=step,
                version=version,
                duration_ms=round(duration_ms or 0.0, 2),
            )
            if finish:
                row = work.row(lease.item_id)
                runs.finish(work, self.policy, row, lease.run_id, now)
            return version

        slot = StepSlot(
            lease.item_id, step, lease.owner, lease.run_id, lease.token, GATED if finish else ()
        )
        return await self.units.commit(unit, slot=slot)

    async def note_retry(
        self, lease: Lease, step: str, attempt: int, error: StepError, delay_s: float
    ) -> bool:
        """Record ``step`` as ``retrying`` after a retryable error; False if the lease is gone."""

        def unit(work: Work) -> bool:
            tx = work.tx
            if not _holds(work, lease, step):
                return False
            now = self.clock.now_ms()
            run = tx.run(lease.run_id)
            retries = (run.retries if run is not None else 0) + 1
            message = urls.redact_credentials(error.message)[:1000]
            tx.update_run(
                lease.run_id,
                retries=retries,
                last_error_code=error.error_code,
                last_error_message=message,
            )
            detail = {
                "step": step,
                "state": "retrying",
                "attempt": attempt,
                "error_code": error.error_code,
                "message": message,
                "delay_s": round(delay_s, 3),
            }
            tx.insert_event(
                now, lease.item_id, lease.run_id, "step", None, None, Trigger.SYSTEM, dumps(detail)
            )
            work.note(
                "step.retrying",
                item_id=lease.item_id,
                run_id=lease.run_id,
                worker_id=lease.owner,
                step=step,
                attempt=attempt,
                error_code=error.error_code,
                delay_s=round(delay_s, 3),
            )
            return True

        return await self.units.commit(unit)

    async def note_step(self, lease: Lease, step: str, event: str, detail: dict[str, Any]) -> bool:
        """Record something about a running step (e.g. it waits for the model server)."""

        def unit(work: Work) -> bool:
            tx = work.tx
            if not _holds(work, lease, step):
                return False
            full = {"step": step, "event": event, **detail}
            tx.insert_event(
                self.clock.now_ms(),
                lease.item_id,
                lease.run_id,
                "step",
                None,
                None,
                Trigger.SYSTEM,
                dumps(full),
            )
            work.note(
                event,
                item_id=lease.item_id,
                run_id=lease.run_id,
                worker_id=lease.owner,
                step=step,
                **detail,
            )
            return True

        return await self.units.commit(unit)

    async def chunks_begin(
        self, lease: Lease, step: str, total: int, model: str | None
    ) -> dict[int, str]:
        """Set up ``step``'s chunks for the lease's run; the outputs of chunks already done.

        The same run resumed (after a crash or a retry) keeps its done chunks
        when the text splits into as many chunks as before; otherwise it
        starts over.
        """

        def unit(work: Work) -> dict[int, str]:
            tx = work.tx
            if not _holds(work, lease, step):
                return {}
            now = self.clock.now_ms()
            rows = tx.chunks(lease.run_id, step)
            if len(rows) == total:
                tx.reopen_chunks(lease.run_id, step, model, now)
            else:
                tx.reset_chunks(lease.run_id, step, total, model, now)
                rows = []
            done = {r.idx: r.output for r in rows if r.status == "done" and r.output is not None}
            self._chunked.setdefault((lease.item_id, lease.token), set()).add(step)
            work.note(
                "chunks.started",
                item_id=lease.item_id,
                run_id=lease.run_id,
                step=step,
                total=total,
                done=len(done),
            )
            return done

        return await self.units.commit(unit)

    async def chunk_update(
        self,
        lease: Lease,
        step: str,
        idx: int,
        status: str,
        *,
        error: StepError | None = None,
        output: str | None = None,
        model: str | None = None,
        spent: Spent | None = None,
        progress: bool = False,
    ) -> bool:
        """Move one chunk to ``status``; False if the lease is gone.

        ``model`` is the model the attempt starting now asks (``processing``);
        ``spent`` what the chunk's requests cost, counted on the chunk, the attempt
        and the store's totals in the same transaction. ``progress``: a finished chunk
        of an item claimed with a crash count, which it clears in the same transaction
        (the item row is written only then).
        """

        def unit(work: Work) -> bool:
            tx = work.tx
            if not _holds(work, lease, step):
                return False
            now = self.clock.now_ms()
            fields: dict[str, Any] = {"status": status, "updated_at": now}
            rows = tx.chunks(lease.run_id, step)
            current = next((r for r in rows if r.idx == idx), None)
            if current is None:
                return False
            if error is not None:
                fields["last_error_code"] = error.error_code
                fields["last_error_message"] = error.message[:1000]
            if status == "retrying":
                fields["retries"] = current.retries + 1
            if output is not None:
                fields["output"] = output
            if model is not None:
                fields["model"] = model
            if progress and not tx.update_fenced(
                lease.item_id,
                lease.owner,
                lease.run_id,
                token=lease.token,
                updated_at=now,
                orphan_count=0,
            ):
                return False
            if spent is not None:
                fields["prompt_tokens"] = current.prompt_tokens + spent.prompt_tokens
                fields["completion_tokens"] = current.completion_tokens + spent.completion_tokens
                fields["cached_tokens"] = current.cached_tokens + (spent.cached_tokens or 0)
                tx.spend(
                    lease.run_id,
                    spent.prompt_tokens,
                    spent.completion_tokens,
                    spent.cached_tokens or 0,
                )
            tx.update_chunk(lease.run_id, step, idx, **fields)
            now_states = [status if r.idx == idx else r.status for r in rows]
            detail: dict[str, Any] = {
                "step": step,
                "chunk": idx,
                "state": status,
                "done": now_states.count("done"),
                # In flight, retrying or not: one figure, as people see it.
                "active": sum(st in CHUNK_ACTIVE for st in now_states),
                "total": len(rows),
            }
            if error is not None:
                detail["error_code"] = error.error_code
            if spent is not None:
                detail["prompt_tokens"] = spent.prompt_tokens
                detail["completion_tokens"] = spent.completion_tokens
            if status in ("done", "error", "retrying"):
                tx.insert_event(
                    now,
                    lease.item_id,
                    lease.run_id,
                    "chunk",
                    None,
                    None,
                    Trigger.SYSTEM,
                    dumps(detail),
                )
            work.note("chunk.progress", item_id=lease.item_id, run_id=lease.run_id, **detail)
            return True

        held = await self.units.commit(unit)
        if held and spent is not None:
            key = (lease.item_id, lease.token)
            p, c, k = self._counted.get(key, (0, 0, 0))
            self._counted[key] = (
                p + spent.prompt_tokens,
                c + spent.completion_tokens,
                k + (spent.cached_tokens or 0),
            )
        return held

    async def complete(self, lease: Lease) -> Item | None:
        """The READY gate and, if it passes, PROCESSING → READY; else FAILED_AI."""

        def unit(work: Work) -> ItemRow | None:
            tx = work.tx
            row = tx.item(lease.item_id)
            if row is None or not _holds(work, lease, "gate"):
                return None
            return runs.finish(work, self.policy, row, lease.run_id, self.clock.now_ms())

        row = await self.units.commit(unit)
        return item_view(row) if row else None

    async def fail(self, lease: Lease, step: str, error: StepError) -> Item | None:
        """The step failed: what it spent is counted (less what its chunks counted), and
        the core records the failure."""
        spent = error.spent
        fresh = self._fresh(
            lease,
            spent.prompt_tokens if spent else 0,
            spent.completion_tokens if spent else 0,
            (spent.cached_tokens or 0) if spent else 0,
        )
        self._chunked.pop((lease.item_id, lease.token), None)

        def unit(work: Work) -> ItemRow | None:
            tx = work.tx
            row = tx.item(lease.item_id)
            if row is None or not _holds(work, lease, step):
                return None
            tx.spend(lease.run_id, *fresh)
            return fail(
                work,
                self.policy,
                row,
                step,
                error.code,
                error.message,
                error.retryable,
                error.debug,
                self.clock.now_ms(),
                retry_after=error.retry_after,
                timed_out=error.timed_out,
                spent=error.spent,
            )

        row = await self.units.commit(unit)
        return item_view(row) if row else None

    async def release(self, lease: Lease, reason: str) -> bool:
        """PROCESSING → QUEUED for a run that stops early (pause, shutdown, cancel).

        The answers its running step was given were paid for: what their chunks did not
        count already goes on the attempt and the totals here.
        """
        p, c, k = self._reported.get((lease.item_id, lease.token), (0, 0, 0))
        fresh = self._fresh(lease, p, c, k)
        self._chunked.pop((lease.item_id, lease.token), None)

        def unit(work: Work) -> bool:
            tx = work.tx
            row = tx.item(lease.item_id)
            if row is None or not _holds(work, lease, "release"):
                return False
            tx.spend(lease.run_id, *fresh)
            requeue(work, row, reason, self.clock.now_ms())
            return True

        return await self.units.commit(unit)


def _hold(
    work: Work, lease: Lease, step: str, item_fields: dict[str, Any] | None, now: int
) -> tuple[bool, int, int | None]:
    """(whether ``lease`` still holds its item, the newest version of ``step``, the
    version this run already has, if a crash kept the answer from going out).

    Writes the item's new fields while at it. The item row is written only
    when something on it changes (title, priority, score, a crash-loop count
    to clear); otherwise the read that checks the lease is all it costs.
    """
    orphaned, newest, edited, existing = work.tx.step_slot(
        lease.item_id, step, lease.owner, lease.run_id, token=lease.token
    )
    if orphaned is None:
        return False, newest, None
    if existing is not None:
        return True, newest, int(existing)
    fields = dict(item_fields or {})
    if edited:
        # A person's edit keeps deciding what the item shows.
        for key in ("priority", "match_score", "title"):
            fields.pop(key, None)
    if fields or orphaned:
        # A finished step ends a crash loop: the orphan count starts again.
        held = work.tx.update_fenced(
            lease.item_id,
            lease.owner,
            lease.run_id,
            token=lease.token,
            updated_at=now,
            orphan_count=0,
            **fields,
        )
        return held, newest, None
    return True, newest, None


def _with_chunks(
    work: Work, lease: Lease, step: str, meta: ArtifactMeta, fresh: tuple[int, ...]
) -> ArtifactMeta:
    """``meta`` with the tokens of the whole step: its own requests' and those of every
    chunk it mapped over, in this attempt or an earlier one of the run."""
    rows = work.tx.chunks(lease.run_id, step)
    prompt, completion, cached = fresh
    return msgspec.structs.replace(
        meta,
        prompt_tokens=prompt + sum(r.prompt_tokens for r in rows),
        completion_tokens=completion + sum(r.completion_tokens for r in rows),
        cached_tokens=(
            cached + sum(r.cached_tokens for r in rows) if meta.cached_tokens is not None else None
        ),
    )


def _write_step(
    work: Work,
    lease: Lease,
    step: str,
    version: int,
    payload: bytes,
    meta: ArtifactMeta,
    now: int,
    duration_ms: float | None,
    finish: bool,
) -> None:
    """Add version ``version`` of ``step``'s artifact to the run, with its step event."""
    tx = work.tx
    tx.add_artifact(
        lease.item_id,
        step,
        version,
        lease.run_id,
        payload.decode(),
        dumps(msgspec.structs.replace(meta, run_id=lease.run_id, created_at=iso(now))),
        now,
    )
    faults.crash_point(f"tx:step:{step}")
    if not finish:
        tx.set_current_step(lease.run_id, next_step(step))
    detail: dict[str, Any] = {"step": step, "version": version}
    if duration_ms is not None:
        detail["duration_ms"] = round(duration_ms, 2)
    tx.insert_event(
        now, lease.item_id, lease.run_id, "step", None, None, Trigger.SYSTEM, dumps(detail)
    )
