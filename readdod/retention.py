"""Retention (Cecelia §6): what an old, archived item may lose, and when.

Only ARCHIVED items are pruned, and never their current artifacts (the
versions ``get``/``show``/export use) nor their current run: old runs by
outcome (succeeded, cancelled, failed), old events, and superseded artifact
versions beyond the newest ``keep_versions``. Cut-offs come from the
orchestrator's clock, so tests move time by hand.
"""

from __future__ import annotations

import anyio
import msgspec

from readdod.clock import iso
from readdod.config import RetentionConfig
from readdod.errors import ReaddodError
from readdod.logging import get_logger
from readdod.orchestrator import Orchestrator

log = get_logger("readdod.retention")

DAY_MS = 24 * 3600 * 1000


class Removed(msgspec.Struct, kw_only=True):
    runs: int
    events: int
    artifacts: int


class PruneReport(msgspec.Struct, kw_only=True):
    dry_run: bool
    removed: Removed
    #: Runs and events older than these (RFC 3339) were eligible.
    finished_before: str
    cancelled_before: str
    failed_before: str
    keep_versions: int


async def prune(orch: Orchestrator, cfg: RetentionConfig, *, dry_run: bool = False) -> PruneReport:
    now = orch.clock.now_ms()
    finished = now - int(cfg.finished_days * DAY_MS)
    cancelled = now - int(cfg.cancelled_days * DAY_MS)
    failed = now - int(cfg.failed_days * DAY_MS)
    counts = await orch.prune(
        finished_before=finished,
        cancelled_before=cancelled,
        failed_before=failed,
        keep_versions=cfg.keep_versions,
        dry_run=dry_run,
    )
    return PruneReport(
        dry_run=dry_run,
        removed=Removed(**counts),
        finished_before=iso(finished) or "",
        cancelled_before=iso(cancelled) or "",
        failed_before=iso(failed) or "",
        keep_versions=cfg.keep_versions,
    )


async def run_periodically(orch: Orchestrator, cfg: RetentionConfig) -> None:
    """The daemon's prune: once at start, then every ``interval_h`` hours, until cancelled."""
    if not cfg.enabled:
        return
    while True:
        try:
            await prune(orch, cfg)
        except ReaddodError as exc:
            log.warning("retention.failed", error_code=exc.error_code, error=exc.message)
        except Exception:
            # A bug in pruning must not take the daemon down; the next day tries again.
            log.exception("retention.failed", error_code="INTERNAL_ERROR")
        await anyio.sleep(cfg.interval_h * 3600)
