"""Exporting: a READY card written as a file, and the item SHIPPED (or FAILED_EXPORT).

The plan (key, document, names) is pure (:mod:`readdod.export.planner`);
the file is written by :class:`~readdod.export.writer.Exporter`, atomically,
before the commit and outside it. This module records what happened: an
EXPORT run with its attempt, and the item's move.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anyio
import msgspec

from readdod import export as exporting
from readdod.core.runs import failure, shown_run
from readdod.core.unit import UnitOfWork, Units, Work, dumps, item_row
from readdod.errors import (
    ErrorCode,
    ExportError,
    ExportFailed,
    IdempotencyConflict,
    InvalidTransition,
    ValidationFailed,
)
from readdod.export import planner
from readdod.export.planner import ExportPlan
from readdod.export.writer import Exporter
from readdod.items import states
from readdod.items.models import ExportResult
from readdod.items.states import Status, Trigger
from readdod.runtime import faults, ids
from readdod.steps import decode_failure
from readdod.store import AttemptRow, ExportRow, ItemRow, RunRow
from readdod.wire.views import item_view, shown_view

S = Status

_EXPORT_HINTS: Final = {
    S.CAPTURED: " It has no card yet: process it, then export it once it is READY.",
    S.QUEUED: " It has no card yet: export it once it is READY.",
    S.PROCESSING: " It is being processed; export it once it is READY.",
    S.FAILED_EXTRACTION: " Its processing failed: `readdod process` it first.",
    S.FAILED_AI: " Its processing failed: `readdod process` it first.",
    S.ARCHIVED: " Unarchive it first.",
}


class Exports:
    """Export an item's card; record the outcome."""

    def __init__(self, units: Units, exporter: Exporter) -> None:
        self.units = units
        self.clock = units.clock
        self.exporter = exporter

    def _check_exportable(self, row: ItemRow, trigger: Trigger) -> None:
        src = Status(row.status)
        if states.allowed(src, S.SHIPPED, trigger):
            return
        raise InvalidTransition(
            f"item {row.id} is {src}; only READY, FAILED_EXPORT and SHIPPED items can be"
            f" exported.{_EXPORT_HINTS.get(src, '')}",
            src=src,
            dst=S.SHIPPED,
            code=ErrorCode(states.refusal_code(src)),
        )

    def _export_run(
        self, tx: UnitOfWork, item_id: str, started: int, now: int, error: ExportError | None = None
    ) -> str:
        """Record one export attempt as an EXPORT run (the item's current run stays)."""
        run_id = ids.ulid(started)
        tx.insert_run(
            RunRow(
                run_id=run_id,
                item_id=item_id,
                mode="EXPORT",
                status="failed" if error else "succeeded",
                refetch=0,
                current_step="export" if error else None,
                attempts=1,
                worker_id=None,
                error_code=error.error_code if error else None,
                error_message=error.message if error else None,
                created_at=started,
                started_at=started,
                finished_at=now,
            )
        )
        tx.insert_attempt(
            AttemptRow(
                attempt_id=run_id,
                run_id=run_id,
                item_id=item_id,
                mode="EXPORT",
                status="failed" if error else "succeeded",
                first_step="export",
                last_step="export",
                worker_id=None,
                error_code=error.error_code if error else None,
                error_message=error.message[:1000] if error else None,
                created_at=started,
                started_at=started,
                finished_at=now,
            )
        )
        return run_id

    async def export(
        self,
        item_id: str,
        *,
        fmt: str | None = None,
        export_key: str | None = None,
        out_dir: str | None = None,
        trigger: Trigger = Trigger.USER,
    ) -> ExportResult:
        """Write the item's card (a user's edit first) as a file: READY/FAILED_EXPORT → SHIPPED.

        Files are written before the commit and outside it, atomically; a crash
        in between leaves a complete file that the next export of the item
        recognises as its own and rewrites, so a retry converges. A key already
        in ``exports`` answers the files it wrote and writes nothing.
        """
        fmt = fmt or self.exporter.default_format
        if fmt not in exporting.FORMATS:
            raise ValidationFailed(f"format must be one of {', '.join(exporting.FORMATS)}")
        if export_key is not None and not 1 <= len(export_key) <= 200:
            raise ValidationFailed("export_key must be 1 to 200 characters long")
        folder = self.exporter.folder(out_dir)

        def read(tx: UnitOfWork) -> ExportPlan:
            row = item_row(tx, item_id)
            self._check_exportable(row, trigger)
            shown = shown_view(tx.shown_artifacts(item_id, shown_run(row)))
            ticked = frozenset(tx.todo_marks(item_id))
            key = export_key or planner.default_key(
                item_id, shown, fmt, str(folder), ticked, row=row, pattern=self.exporter.pattern
            )
            previous = [
                path
                for files in tx.export_files(item_id, fmt)
                for path in msgspec.json.decode(files, type=list[str])
            ]
            return ExportPlan(row, shown, key, tx.export(key), previous, ticked)

        plan = await self.units.read(read)
        if plan.done is not None:
            return await self._export_reused(plan, fmt, trigger)
        started = self.clock.now_ms()
        try:
            doc = planner.document(plan, started)
            data = exporting.render(fmt, doc)
        except Exception as exc:
            err = ExportError(
                f"cannot render item {item_id}'s card as {fmt} ({type(exc).__name__}: {exc})."
                f" Fix the card with `readdod edit {item_id} card` or regenerate it.",
                code=ErrorCode.EXPORT_RENDER_FAILED,
                debug=repr(exc),
            )
            raise await self._export_failed(item_id, fmt, err, trigger, started) from exc
        names = planner.file_names(self.exporter.pattern, plan, doc, fmt)
        marker = exporting.marker(fmt, item_id)
        # A file written under an earlier card's title, unrecorded because of a crash.
        kin = names.any_title() if doc.card_version > 1 else None
        try:
            path = await anyio.to_thread.run_sync(
                self.exporter.write, folder, names.candidate, plan.previous, marker, data, kin
            )
        except ExportError as exc:
            raise await self._export_failed(item_id, fmt, exc, trigger, started) from exc
        faults.crash_point("export:written")
        files = [str(path)]
        card_version = doc.card_version

        def unit(work: Work) -> tuple[ItemRow, list[str]]:
            tx = work.tx
            twin = tx.export(plan.key)
            if twin is not None:
                return work.row(item_id), msgspec.json.decode(twin.files, type=list[str])
            row = work.row(item_id)
            self._check_exportable(row, trigger)
            now = self.clock.now_ms()
            tx.insert_export(
                ExportRow(
                    export_key=plan.key,
                    item_id=item_id,
                    card_version=card_version,
                    template_version=exporting.TEMPLATE_VERSIONS[fmt],
                    format=fmt,
                    files=dumps(files),
                    # The file's exported_at: a rewrite of it (its file gone) says the same.
                    created_at=started,
                )
            )
            run_id = self._export_run(tx, item_id, started, now)
            faults.crash_point("tx:export")
            detail = {"op": "export", "format": fmt, "export_key": plan.key, "files": files}
            shipped = work.move(
                row,
                S.SHIPPED,
                trigger,
                now=now,
                detail={**detail, "export_run_id": run_id},
                failure=None,
            )
            return shipped, files

        with anyio.CancelScope(shield=True):
            row, files = await self.units.commit(unit)
        return ExportResult(item=item_view(row), export_key=plan.key, files=files, reused=False)

    async def _export_reused(self, plan: ExportPlan, fmt: str, trigger: Trigger) -> ExportResult:
        done = plan.done
        assert done is not None
        if done.item_id != plan.row.id or done.format != fmt:
            raise IdempotencyConflict(
                f"export_key {plan.key!r} was already used to export item {done.item_id} as"
                f" {done.format}; use a new export_key"
            )
        files = msgspec.json.decode(done.files, type=list[str])
        gone = await anyio.to_thread.run_sync(self.exporter.missing, files)
        if gone:
            return await self._rewrite(plan, fmt, trigger, files, gone)
        if plan.row.status == S.SHIPPED:
            return ExportResult(
                item=item_view(plan.row), export_key=plan.key, files=files, reused=True
            )

        def unit(work: Work) -> ItemRow:
            row = work.row(plan.row.id)
            self._check_exportable(row, trigger)
            if row.status == S.SHIPPED:
                return row
            detail = {"op": "export", "export_key": plan.key, "files": files, "reused": True}
            return work.move(
                row,
                S.SHIPPED,
                trigger,
                now=self.clock.now_ms(),
                detail=detail,
                failure=None,
            )

        row = await self.units.commit(unit)
        return ExportResult(item=item_view(row), export_key=plan.key, files=files, reused=True)

    async def _rewrite(
        self, plan: ExportPlan, fmt: str, trigger: Trigger, files: list[str], gone: list[str]
    ) -> ExportResult:
        """The export ``plan.key`` names wrote ``files``, of which ``gone`` were deleted
        since: write them again, the same content under the same names, and say so.

        The same content needs the same card: once the item shows another card
        version (or the format's template changed), the key cannot give back what
        it wrote, and the answer says how to export the card as it is now.
        """
        done = plan.done
        assert done is not None
        item_id = plan.row.id
        card = plan.card
        version = card.version if card is not None else 0
        template = exporting.TEMPLATE_VERSIONS[fmt]
        if (version, template) != (done.card_version, done.template_version):
            raise IdempotencyConflict(
                f"export_key {plan.key!r} wrote {gone[0]} from card version"
                f" {done.card_version} of item {item_id}; that file is gone, and the item"
                f" shows card version {version} now, so it cannot be written again as it"
                " was. Export without --export-key (the default key follows the card), or"
                " with a new export_key, to write the card as it is now."
            )
        started = self.clock.now_ms()
        try:
            doc = planner.document(plan, done.created_at)
            data = exporting.render(fmt, doc)
        except Exception as exc:
            err = ExportError(
                f"cannot render item {item_id}'s card as {fmt} again ({type(exc).__name__}:"
                f" {exc}). Fix the card with `readdod edit {item_id} card` or regenerate it.",
                code=ErrorCode.EXPORT_RENDER_FAILED,
                debug=repr(exc),
            )
            raise await self._export_failed(item_id, fmt, err, trigger, started) from exc
        marker = exporting.marker(fmt, item_id)
        try:
            for path in gone:
                await anyio.to_thread.run_sync(self.exporter.rewrite, Path(path), marker, data)
        except ExportError as exc:
            raise await self._export_failed(item_id, fmt, exc, trigger, started) from exc

        def unit(work: Work) -> ItemRow:
            row = work.row(item_id)
            self._check_exportable(row, trigger)
            now = self.clock.now_ms()
            run_id = self._export_run(work.tx, item_id, started, now)
            detail = {
                "op": "export",
                "format": fmt,
                "export_key": plan.key,
                "files": files,
                "reused": True,
                "rewritten": gone,
                "export_run_id": run_id,
            }
            return work.move(row, S.SHIPPED, trigger, now=now, detail=detail, failure=None)

        with anyio.CancelScope(shield=True):
            row = await self.units.commit(unit)
        return ExportResult(
            item=item_view(row), export_key=plan.key, files=files, reused=True, rewritten=gone
        )

    async def _export_failed(
        self, item_id: str, fmt: str, err: ExportError, trigger: Trigger, started: int
    ) -> ExportFailed:
        """Record a failed export and return the error to answer.

        READY and FAILED_EXPORT items become FAILED_EXPORT with the failure; a
        SHIPPED item stays SHIPPED (§3) and the event log keeps the failure.
        """

        def unit(work: Work) -> ItemRow:
            tx = work.tx
            row = work.row(item_id)
            now = self.clock.now_ms()
            run_id = self._export_run(tx, item_id, started, now, err)
            detail = {
                "op": "export",
                "format": fmt,
                "error_code": err.error_code,
                "path": err.path,
                "export_run_id": run_id,
            }
            src = Status(row.status)
            if src is S.SHIPPED:
                tx.insert_event(
                    now,
                    row.id,
                    row.current_run_id,
                    "export",
                    src,
                    src,
                    trigger,
                    dumps({**detail, "message": err.message}),
                )
                work.note("export.failed", item_id=row.id, **detail)
                return row
            prev = decode_failure(row.failure) if row.failure else None
            made = failure(
                "export",
                err.code,
                err.message,
                err.retryable,
                err.debug,
                now,
                attempts=prev.attempts + 1 if prev and prev.failed_step == "export" else 1,
            )
            return work.move(
                row,
                S.FAILED_EXPORT,
                Trigger.SYSTEM,
                now=now,
                detail=detail,
                failure=dumps(made),
            )

        with anyio.CancelScope(shield=True):
            row = await self.units.commit(unit)
        return ExportFailed(
            f"{err.message} Item {item_id} is {row.status}; export it again once that is fixed.",
            code=err.code,
            item_status=row.status,
            path=err.path,
        )
