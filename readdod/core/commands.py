"""What people (and the retry scheduler) ask of items: the commands.

Each command is one unit of work that checks its move against the state
machine (through :class:`~readdod.core.unit.Work`) and records it. A capture
that queues its item commits through the attached
:class:`~readdod.core.workers.Workers`' claim, so the item may start at once;
where a command touches running work (``archive --cancel``, pause), the core
tells them after the commit.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from readdod.core import intake, retry_policy
from readdod.core.runs import complete_run, enqueue, shown_run, shown_score
from readdod.core.unit import Units, Work, dumps
from readdod.core.workers import Workers
from readdod.errors import (
    ErrorCode,
    IdempotencyConflict,
    InvalidTransition,
    NotFound,
    ValidationFailed,
)
from readdod.items import states, todos
from readdod.items.models import Artifact, ArtifactMeta, CaptureRequest, Item
from readdod.items.states import Status, Trigger
from readdod.runtime.clock import iso
from readdod.settings.config import RetryConfig
from readdod.steps import NAMES, PAYLOAD_TYPES, WIRE_STEPS, decode_failure, rubric, wire_step
from readdod.store import ItemRow
from readdod.text import controls
from readdod.wire.views import item_view, shown_view

S = Status
PAUSED_KEY: Final = "paused"
#: The fields of a person's artifact that are text bodies (their lines kept); every other
#: string in it (a title, a tag, a todo, a key point, a URL) is one line.
BODY_FIELDS: Final = frozenset(
    {"text", "markdown", "excerpt", "tl_dr", "intent_relevance", "summary", "one_liner"}
)


class Commands:
    """Capture, process, archive, unarchive, ship, edit, retry, pause."""

    def __init__(
        self,
        units: Units,
        *,
        auto_process: bool = True,
        max_capture_bytes: int,
        retry: RetryConfig | None = None,
    ) -> None:
        self.units = units
        #: Automatic retries across runs (``[retry]``): when a WORKER_LOST item goes again.
        self.retry = retry or RetryConfig()
        self.clock = units.clock
        self.auto_process = auto_process
        #: The largest html or text a capture may hand in, in UTF-8 bytes (fetch.max_bytes).
        self.max_capture_bytes = max_capture_bytes
        #: Who runs the actors, once the composition root attaches them.
        self.workers: Workers | None = None

    async def capture(self, req: CaptureRequest) -> tuple[Item, bool]:
        """A new item (created: True), or the one this capture repeats (False)."""
        item, created, _ = await self.capture_detail(req)
        return item, created

    async def capture_detail(self, req: CaptureRequest) -> tuple[Item, bool, bool]:
        """:meth:`capture`, and whether a repeat's intent was set (``set_intent``)."""
        checked = intake.check(req, self.max_capture_bytes)

        def unit(work: Work) -> tuple[ItemRow, bool, bool]:
            now = self.clock.now_ms()
            return intake.capture_unit(work, checked, now, auto_process=self.auto_process)

        if not self.auto_process or self.workers is None:
            row, created, retargeted = await self.units.commit(unit)
            return item_view(row), created, retargeted
        # Queued: the workers' claim may take it in the same transaction and start it now.
        (row, created, retargeted), claimed = await self.workers.claim_with(unit)
        row = next((c.item for c in claimed if c.item.id == row.id), row)
        return item_view(row), created, retargeted

    async def process(
        self,
        item_id: str,
        *,
        regenerate: bool = False,
        refetch: bool = False,
        request_id: str | None = None,
    ) -> tuple[Item, str]:
        """Queue an item: first run, retry of a failed run, or a new run.

        With ``request_id``, a repeated request answers what the first one did
        and queues nothing more.
        """

        def unit(work: Work) -> tuple[ItemRow, str]:
            tx = work.tx
            if request_id is not None:
                seen = tx.request(request_id)
                if seen is not None:
                    method, seen_item, response = seen
                    if method != "process" or seen_item != item_id:
                        raise IdempotencyConflict(
                            f"process_request_id {request_id!r} was already used for"
                            f" {method} on item {seen_item}; use a new id"
                        )
                    first = msgspec.json.decode(response)
                    return work.row(item_id), str(first["run_id"])
            row = work.row(item_id)
            src = Status(row.status)
            now = self.clock.now_ms()
            if src is S.READY and not regenerate:
                raise InvalidTransition(
                    f"item {item_id} is already READY; use regenerate to make new versions",
                    src=src,
                    dst=S.QUEUED,
                )
            if src is S.QUEUED:
                raise InvalidTransition(
                    f"item {item_id} is already QUEUED; it runs as soon as a worker is free",
                    src=src,
                    dst=S.QUEUED,
                )
            if src is S.SHIPPED:
                raise InvalidTransition(
                    f"item {item_id} is SHIPPED; to make new versions, archive it"
                    f" (`readdod archive {item_id}`), then"
                    f" `readdod process {item_id} --regenerate`",
                    src=src,
                    dst=S.QUEUED,
                )
            resume = src in (S.FAILED_EXTRACTION, S.FAILED_AI) and not (regenerate or refetch)
            if src is S.CAPTURED:
                mode: str | None = "PROCESS"
            elif resume:
                mode = None
            else:
                mode = "REGENERATE"
            new = enqueue(
                work,
                row,
                Trigger.USER,
                now,
                new_run_mode=mode,
                refetch=refetch,
                detail={"op": "process", "regenerate": regenerate, "refetch": refetch},
            )
            if request_id is not None:
                tx.insert_request(
                    request_id, "process", item_id, dumps({"run_id": new.current_run_id}), now
                )
            assert new.current_run_id is not None
            return new, new.current_run_id

        row, run_id = await self.units.commit(unit)
        return item_view(row), run_id

    async def archive(
        self, item_id: str, *, reason: str | None = None, cancel: bool = False
    ) -> tuple[Item, bool]:
        """Archive an item; with ``cancel``, a PROCESSING one too.

        Returns the item and whether a run was cancelled, whose actor the
        workers are then told to stop. Its lease is gone the moment this
        commits, so whatever the actor still tries to write is refused by the
        fence.
        """
        if reason is not None and reason not in ("USER_ARCHIVE", "FAILURE_ARCHIVE"):
            raise ValidationFailed("reason must be USER_ARCHIVE or FAILURE_ARCHIVE")

        def unit(work: Work) -> tuple[ItemRow, bool]:
            tx = work.tx
            row = work.row(item_id)
            src = Status(row.status)
            why = reason or ("FAILURE_ARCHIVE" if src in states.FAILED else "USER_ARCHIVE")
            now = self.clock.now_ms()
            cancelled = False
            if src is S.PROCESSING and cancel:
                row = work.move(
                    row,
                    S.QUEUED,
                    Trigger.SYSTEM,
                    now=now,
                    detail={"reason": "cancel"},
                    lease_owner=None,
                    lease_expires_at=None,
                )
                src = S.QUEUED
                cancelled = True
            # An archived item is never retried by itself: its failure must not say so.
            kept: dict[str, Any] = {}
            if row.failure:
                failure = decode_failure(row.failure)
                if failure.next_attempt_at is not None:
                    kept["failure"] = dumps(msgspec.structs.replace(failure, next_attempt_at=None))
            new = work.move(
                row,
                S.ARCHIVED,
                Trigger.USER,
                now=now,
                detail={"op": "archive", "reason": why},
                archive_reason=why,
                next_attempt_at=0,
                **kept,
            )
            if src is S.QUEUED and row.current_run_id:
                tx.update_run(row.current_run_id, status="cancelled", finished_at=now)
                tx.end_attempt(
                    row.current_run_id,
                    "cancelled",
                    now,
                    error_message="archived" + (" while it ran" if cancelled else ""),
                )
            return new, cancelled

        row, cancelled = await self.units.commit(unit)
        if cancelled and self.workers is not None:
            self.workers.cancel(item_id)
        return item_view(row), cancelled

    async def unarchive(self, item_id: str, *, regenerate: bool = False) -> Item:
        def unit(work: Work) -> ItemRow:
            tx = work.tx
            row = work.row(item_id)
            now = self.clock.now_ms()
            if row.status != S.ARCHIVED:
                raise InvalidTransition(
                    f"item {item_id} is {row.status}, not ARCHIVED",
                    src=row.status,
                    dst=S.QUEUED if regenerate else S.READY,
                    code=ErrorCode(states.refusal_code(Status(row.status))),
                )
            complete = None if regenerate else complete_run(work, row)
            if complete is not None:
                run_score = tx.run_payloads(row.id, complete, ("score",))["score"][1]
                priority, match = shown_score(work, row.id, run_score)
                return work.move(
                    row,
                    S.READY,
                    Trigger.USER,
                    now=now,
                    detail={"op": "unarchive", "run_id": complete},
                    archive_reason=None,
                    current_run_id=complete,
                    ready_run_id=complete,
                    priority=priority,
                    match_score=match,
                    failure=None,
                    next_attempt_at=0,
                )
            run = tx.run(row.current_run_id) if row.current_run_id else None
            finished = run is not None and run.status == "succeeded"
            return enqueue(
                work,
                row,
                Trigger.USER,
                now,
                new_run_mode="REGENERATE" if regenerate or finished else None,
                detail={"op": "unarchive", "regenerate": regenerate},
            )

        return item_view(await self.units.commit(unit))

    async def ship(self, item_id: str) -> Item:
        def unit(work: Work) -> ItemRow:
            row = work.row(item_id)
            if row.status == S.SHIPPED:
                return row
            return work.move(
                row,
                S.SHIPPED,
                Trigger.USER,
                now=self.clock.now_ms(),
                detail={"op": "ship"},
                # A FAILED_EXPORT item marked done is no longer failed.
                failure=None,
            )

        return item_view(await self.units.commit(unit))

    async def set_paused(self, paused: bool) -> bool:
        def unit(work: Work) -> bool:
            tx = work.tx
            was = tx.setting(PAUSED_KEY) == "1"
            if was != paused:
                tx.set_setting(PAUSED_KEY, "1" if paused else "0")
                tx.insert_event(
                    self.clock.now_ms(),
                    None,
                    None,
                    "pause" if paused else "resume",
                    None,
                    None,
                    Trigger.USER,
                )
                work.note("daemon.paused" if paused else "daemon.resumed")
            return paused

        return await self.units.commit(unit)

    async def edit(
        self, item_id: str, artifact_type: str, payload: Any, *, discard: bool = False
    ) -> Artifact:
        """Store a person's version of an artifact; it wins over every system version.

        A person's version is checked for structure only (readdod.steps.rubric.validate_user).
        With ``discard``, their versions of the type are set aside (kept, not
        shown) and the answer is the version now shown.
        """
        if artifact_type not in PAYLOAD_TYPES:
            raise ValidationFailed(
                f"type must be one of {', '.join(PAYLOAD_TYPES)}, got {artifact_type!r}"
            )
        body = ""
        decoded: Any = None
        if not discard:
            # Cleaned as capture cleans an intent, a title or a tag: no control character
            # is stored, so none reaches a terminal, an export or a task manager.
            payload = controls.cleaned(todos.without_ticks(artifact_type, payload), BODY_FIELDS)
            decoded, problems = rubric.validate_user(artifact_type, payload)
            if decoded is None or problems:
                raise ValidationFailed(
                    f"the edited {artifact_type} is not valid: " + "; ".join(problems)
                )
            body = dumps(decoded)

        def unit(work: Work) -> Artifact:
            tx = work.tx
            row = work.row(item_id)
            src = Status(row.status)
            if src is S.PROCESSING:
                raise InvalidTransition(
                    f"item {item_id} is being processed; edit it once it is done",
                    src=src,
                    dst=src,
                    code=ErrorCode.PROCESSING_IN_PROGRESS,
                )
            now = self.clock.now_ms()
            showing = shown_run(row)
            if discard:
                if not tx.discard_user_versions(item_id, artifact_type):
                    raise NotFound(
                        f"item {item_id} has no version of yours of {artifact_type} to discard"
                    )
                detail: dict[str, Any] = {"op": "discard", "artifact_type": artifact_type}
            else:
                base = tx.shown_artifacts(item_id, showing).get(artifact_type)
                if base is None:
                    raise NotFound(f"item {item_id} has no {artifact_type} yet; process it first")
                meta = ArtifactMeta(run_id=base.run_id, engine="user", created_at=iso(now))
                version = tx.insert_artifact(
                    item_id, artifact_type, "user", base.run_id, body, dumps(meta), now
                )
                detail = {"op": "edit", "artifact_type": artifact_type, "version": version}
            fields: dict[str, Any] = {"updated_at": now}
            if artifact_type == "score":
                run_score = (
                    tx.run_payloads(item_id, showing, ("score",)).get("score") if showing else None
                )
                priority, match = shown_score(work, item_id, run_score[1] if run_score else None)
                if match is not None:
                    fields.update(priority=priority, match_score=match)
            work.touch(row, **fields)
            tx.insert_event(now, item_id, None, "edit", None, None, Trigger.USER, dumps(detail))
            work.note("artifact.edited", item_id=item_id, **detail)
            shown = shown_view(tx.shown_artifacts(item_id, showing))
            if artifact_type not in shown:
                raise NotFound(f"item {item_id} shows no {artifact_type} now")
            return shown[artifact_type]

        return await self.units.commit(unit)

    async def retry_failed(self, *, step: str | None = None, dry_run: bool = False) -> list[str]:
        """Queue every FAILED_EXTRACTION/FAILED_AI item again (those of ``step`` only).

        ``step`` is a wire name (``extract``, ``summarize``, ...) or the
        internal one (``extraction``, ``summary``, ..., ``gate`` for ``card``).
        """
        steps = [wire_step(s) for s in NAMES]
        wanted = WIRE_STEPS.get(step, step) if step is not None else None
        if wanted is not None and wanted not in steps:
            raise ValidationFailed(
                f"step must be one of {', '.join(steps)} (or {', '.join((*NAMES, 'gate'))});"
                f" got {step!r}"
            )

        def unit(work: Work) -> list[str]:
            tx = work.tx
            now = self.clock.now_ms()
            picked = []
            for row in tx.failed_items((S.FAILED_EXTRACTION, S.FAILED_AI)):
                failure = decode_failure(row.failure) if row.failure else None
                if wanted is not None and (failure is None or failure.failed_step != wanted):
                    continue
                picked.append(row.id)
                if not dry_run:
                    enqueue(
                        work,
                        row,
                        Trigger.USER,
                        now,
                        new_run_mode=None,
                        detail={"op": "retry_failed", "step": step},
                    )
            return picked

        return await self.units.commit(unit)

    async def requeue_due(
        self, limit: int = 100, *, clean_since: int | None = None
    ) -> tuple[list[str], int | None]:
        """Queue the failed items whose automatic retry is due.

        ``clean_since``: when the daemon started. An item failed WORKER_LOST
        waits besides until the daemon has run ``[retry] worker_lost`` seconds
        since then (its due time moves there), so a daemon that keeps dying
        does not take it up again at every start. Returns the ids queued and
        when the next one is due (epoch ms), if any.
        """

        def unit(work: Work) -> tuple[list[str], int | None]:
            tx = work.tx
            now = self.clock.now_ms()
            done = []
            for row in tx.retries_due(now, limit):
                held = self._held_until(row, clean_since)
                if held is not None and held > now and row.failure is not None:
                    failure = msgspec.structs.replace(
                        decode_failure(row.failure), next_attempt_at=iso(held)
                    )
                    work.touch(row, next_attempt_at=held, failure=dumps(failure))
                    continue
                retry = row.auto_retries + 1
                enqueue(
                    work,
                    row,
                    Trigger.SYSTEM,
                    now,
                    new_run_mode=None,
                    detail={"op": "auto_retry", "retry": retry},
                    auto_retries=retry,
                )
                done.append(row.id)
            return done, tx.next_retry_at()

        return await self.units.commit(unit)

    def _held_until(self, row: ItemRow, clean_since: int | None) -> int | None:
        """When a due WORKER_LOST item may go, the daemon having run cleanly; None: now."""
        if clean_since is None or row.failure is None:
            return None
        if decode_failure(row.failure).error_code != ErrorCode.WORKER_LOST:
            return None
        return retry_policy.clean_run_due(self.retry, row.auto_retries, clean_since)

    async def pause(self) -> bool:
        """Pause: claim nothing more, and stop the running items where they are.

        Answered once they are back in QUEUED: no model request goes out after.
        """
        paused = await self.set_paused(True)
        if self.workers is not None:
            await self.workers.pause()
        return paused

    async def resume(self) -> bool:
        paused = await self.set_paused(False)
        if self.workers is not None:
            self.workers.set_paused(False)
        return paused
