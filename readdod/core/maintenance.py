"""Maintenance: retention (DESIGN §9, docs/retention.md) and online backups.

Retention prunes the history of every item, whatever its state, each part by its
own age and outcome: finished runs by outcome (succeeded, cancelled, failed) with
their attempts, chunks and events, events of no run, and superseded artifact
versions beyond the newest ``keep_versions``. Never what an item shows: the
versions ``get``/``show``/export use, the run it shows, its current run (its
latest outcome and failure), its capture event. Token totals are counters, so
pruning never lowers them. Cut-offs come from the core's clock, so tests and the
retention bench move time by hand.
"""

from __future__ import annotations

from typing import Final

import msgspec

from readdod.core.unit import Units, Work
from readdod.runtime.clock import iso
from readdod.runtime.logging import get_logger
from readdod.settings.config import RetentionConfig
from readdod.store.rows import BackupResult

log = get_logger("readdod.retention")

DAY_MS: Final = 24 * 3600 * 1000


class Removed(msgspec.Struct, kw_only=True):
    """What a prune removed (or, dry, would remove), by kind."""

    runs: int
    attempts: int
    events: int
    artifacts: int
    chunks: int


class PruneReport(msgspec.Struct, kw_only=True):
    dry_run: bool
    removed: Removed
    #: Runs and events older than these (RFC 3339) were eligible.
    finished_before: str
    cancelled_before: str
    failed_before: str
    keep_versions: int


class Maintenance:
    """Prune what retention allows; copy the database."""

    def __init__(self, units: Units, retention: RetentionConfig | None = None) -> None:
        self.units = units
        self.clock = units.clock
        self.retention = retention or RetentionConfig()

    async def prune(
        self, cfg: RetentionConfig | None = None, *, dry_run: bool = False
    ) -> PruneReport:
        """Remove what ``cfg`` (the daemon's ``[retention]`` by default) allows, then shrink
        the file."""
        cfg = cfg or self.retention
        now = self.clock.now_ms()
        finished = now - int(cfg.finished_days * DAY_MS)
        cancelled = now - int(cfg.cancelled_days * DAY_MS)
        failed = now - int(cfg.failed_days * DAY_MS)

        def unit(work: Work) -> dict[str, int]:
            counts = work.tx.prune_history(
                finished_before=finished,
                cancelled_before=cancelled,
                failed_before=failed,
                keep_versions=cfg.keep_versions,
                dry_run=dry_run,
            )
            work.note("retention.pruned", dry_run=dry_run, **counts)
            return counts

        counts = await self.units.commit(unit, alone=True)
        if not dry_run and any(counts.values()):
            await self.units.store.reclaim()
        return PruneReport(
            dry_run=dry_run,
            removed=Removed(**counts),
            finished_before=iso(finished) or "",
            cancelled_before=iso(cancelled) or "",
            failed_before=iso(failed) or "",
            keep_versions=cfg.keep_versions,
        )

    async def backup(self, dest: str) -> BackupResult:
        """An online copy of the database, made off the event loop."""
        result = await self.units.store.backup(dest)
        log.info(
            "backup.done",
            path=result.path,
            bytes=result.bytes,
            pages=result.pages,
            duration_ms=result.duration_ms,
        )
        return result
