"""The read model: what people and reports see, each read on one snapshot.

Reads never write and never change a status; they turn the store's rows
into the wire's views (:mod:`readdod.wire.views`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from readdod import export as exporting
from readdod.core.commands import PAUSED_KEY
from readdod.core.runs import shown_run
from readdod.core.todos import ticked, ticked_counts
from readdod.core.unit import UnitOfWork, Units, item_row
from readdod.errors import NotFound, ValidationFailed
from readdod.items import states
from readdod.items.models import PRIORITIES, Artifact, ArtifactVersion, Item
from readdod.items.states import Status
from readdod.runtime import collector
from readdod.runtime.clock import Clock, iso
from readdod.status import health as hc
from readdod.wire.views import (
    artifact_view,
    attempt_view,
    chunk_progress,
    chunk_view,
    event_view,
    item_view,
    ledger,
)

S = Status
#: What ``get`` adds to an item on request.
GET_INCLUDES: Final = ("chunks",)


class ReadModel:
    """Items, artifacts, lists, health and stats."""

    def __init__(self, units: Units) -> None:
        self.units = units
        self.clock: Clock = units.clock

    async def is_paused(self) -> bool:
        return await self.units.read(lambda tx: tx.setting(PAUSED_KEY) == "1")

    async def health(self, thresholds: hc.Thresholds, *, circuit: str, paused: bool) -> hc.Report:
        """The Cecelia §7 metrics on one snapshot, judged against ``thresholds``."""
        now = self.clock.now_ms()
        since = now - hc.WINDOW_MS

        def read(tx: UnitOfWork) -> hc.Metrics:
            outcomes = {
                status: (n, avg)
                for status, n, avg in tx.run_outcomes_since(since)
                if status != "cancelled"
            }
            finished = sum(n for n, _ in outcomes.values())
            succeeded = outcomes.get("succeeded", (0, None))[0]
            total_ms = sum(n * avg for n, avg in outcomes.values() if avg is not None)
            backlog, waiting_since = tx.backlog()
            counts = tx.count_by_status()
            return hc.Metrics(
                runs_finished_24h=finished,
                runs_succeeded_24h=succeeded,
                success_rate_24h=round(succeeded / finished, 4) if finished else None,
                avg_run_s_24h=round(total_ms / finished / 1000, 3) if finished else None,
                backlog=backlog,
                oldest_queued_s=(
                    round(max(0, now - waiting_since) / 1000, 3)
                    if waiting_since is not None
                    else None
                ),
                failed_items=sum(counts.get(s, 0) for s in states.FAILED),
                failures_24h=tx.failures_since(since),
                circuit=circuit,
                paused=paused,
            )

        return hc.evaluate(await self.units.read(read), thresholds)

    async def stats(self, step_samples: int = 20_000) -> hc.Stats:
        def read(tx: UnitOfWork) -> hc.Stats:
            counts = tx.count_by_status()
            prompt, completion = tx.token_totals()
            return hc.Stats(
                items_by_status=counts,
                items_total=sum(counts.values()),
                runs_by_outcome=tx.runs_by_status(),
                attempts_by_outcome=tx.attempts_by_status(),
                step_durations_ms=hc.step_times(tx.step_durations(step_samples)),
                tokens=hc.Tokens(prompt=prompt, completion=completion, total=prompt + completion),
                todos=ticked_counts(tx),
            )

        stats = await self.units.read(read)
        stats.store = self.units.store.counters()
        stats.collector = collector.counters()
        return stats

    async def ready_from_runs(self) -> list[str]:
        """READY items whose last move was their run's PROCESSING → READY.

        What ``daemon.auto_export`` had yet to export when the daemon last
        stopped or crashed (its queue lives in memory).
        """

        return await self.units.read(lambda tx: tx.ready_from_runs())

    async def queue_gauges(self) -> tuple[dict[str, int], float | None]:
        """Items by status and, when any waits, the age in seconds of the oldest QUEUED one
        (the metrics' gauges), on one snapshot."""
        now = self.units.clock.now_ms()

        def read(tx: UnitOfWork) -> tuple[dict[str, int], float | None]:
            _, waiting_since = tx.backlog()
            age = None if waiting_since is None else max(0, now - waiting_since) / 1000
            return tx.count_by_status(), age

        return await self.units.read(read)

    async def queued_count(self) -> int:
        """How many items wait in QUEUED (for systemd's STATUS= line)."""
        return await self.units.read(lambda tx: tx.count_status(S.QUEUED))

    # --- reads -------------------------------------------------------------

    async def get(
        self,
        item_id: str,
        *,
        history: bool = False,
        versions: bool = False,
        include: Sequence[str] = (),
    ) -> dict[str, Any]:
        """An item with what it shows; ``include`` adds parts on request (``chunks``)."""
        unknown = sorted(set(include) - set(GET_INCLUDES))
        if unknown:
            raise ValidationFailed(
                f"include names {', '.join(map(repr, unknown))}, which `get` does not know;"
                f" it can include {', '.join(GET_INCLUDES)}"
            )

        def read(tx: UnitOfWork) -> dict[str, Any]:
            row = item_row(tx, item_id)
            shown = tx.shown_artifacts(item_id, shown_run(row))
            every = tx.all_artifacts(item_id)
            tried = tx.attempts_for(item_id)
            out: dict[str, Any] = {
                "item": item_view(row),
                # Each todo shown with ``done``; ``todos`` numbers them for `todo done ID N`.
                **ticked(shown, tx.todo_marks(item_id)),
                "runs": ledger(tx.runs_for(item_id), every, tx.events_for(item_id), tried),
                "attempts": [attempt_view(a) for a in tried],
                "siblings": [
                    r.id
                    for r in (
                        tx.items_by_canonical_url(row.canonical_url) if row.canonical_url else []
                    )
                    if r.id != row.id
                ],
                # Every file the item's exports wrote: where a person finds the card.
                "exported": list(
                    dict.fromkeys(
                        path
                        for fmt in exporting.FORMATS
                        for files in tx.export_files(item_id, fmt)
                        for path in msgspec.json.decode(files, type=list[str])
                    )
                ),
            }
            if versions:
                out["versions"] = [
                    ArtifactVersion(
                        artifact_type=a.artifact_type,  # type: ignore[arg-type]
                        version=a.version,
                        created_by=a.created_by,  # type: ignore[arg-type]
                        run_id=a.run_id,
                        created_at=iso(a.created_at) or "",
                        shown=a.artifact_type in shown
                        and shown[a.artifact_type].version == a.version,
                        discarded=bool(a.discarded),
                    )
                    for a in every
                ]
            if history:
                out["events"] = [event_view(e) for e in tx.events_for(item_id)]
            if row.current_run_id:
                chunks = tx.chunks(row.current_run_id)
                progress = chunk_progress(chunks)
                if progress:
                    out["chunks"] = progress
                if "chunks" in include:
                    out["chunk_list"] = [chunk_view(c) for c in chunks]
            elif "chunks" in include:
                out["chunk_list"] = []
            return out

        return await self.units.read(read)

    async def artifact(self, item_id: str, artifact_type: str, version: int | None) -> Artifact:
        def read(tx: UnitOfWork) -> Artifact:
            item_row(tx, item_id)
            row = (
                tx.latest_artifact(item_id, artifact_type)
                if version is None
                else tx.artifact(item_id, artifact_type, version)
            )
            if row is None:
                which = "any version" if version is None else f"version {version}"
                raise NotFound(f"item {item_id} has no {artifact_type} artifact ({which})")
            return artifact_view(row)

        return await self.units.read(read)

    async def list_items(
        self,
        *,
        statuses: Sequence[str] | None = None,
        priority: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        tags: Sequence[str] = (),
        query: str | None = None,
    ) -> tuple[list[Item], str | None]:
        """Newest first. The cursor is the last id seen: ids never change, so a
        cursor stays valid however the items change between pages."""
        for s in statuses or ():
            if s not in Status.__members__:
                raise ValidationFailed(f"unknown status {s!r}")
        if priority is not None and priority not in PRIORITIES:
            raise ValidationFailed(f"priority must be one of {', '.join(PRIORITIES)}")
        rows = await self.units.read(
            lambda tx: tx.list_items(statuses, priority, limit + 1, cursor, tags=tags, query=query)
        )
        more = len(rows) > limit
        rows = rows[:limit]
        return [item_view(r) for r in rows], (rows[-1].id if more and rows else None)
