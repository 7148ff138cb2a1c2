"""The daemon's retention loop: prune once at start, then every ``interval_h`` hours.

What may be pruned, and when, is the core's (:mod:`readdod.core.maintenance`).
"""

from __future__ import annotations

import anyio

from readdod.core.maintenance import Maintenance
from readdod.errors import ReaddodError
from readdod.runtime.logging import get_logger
from readdod.settings.config import RetentionConfig

log = get_logger("readdod.retention")


async def run_periodically(maintenance: Maintenance, cfg: RetentionConfig) -> None:
    """Prune by ``cfg`` until cancelled; a failed pass waits for the next one."""
    if not cfg.enabled:
        return
    while True:
        try:
            await maintenance.prune(cfg)
        except ReaddodError as exc:
            log.warning("retention.failed", error_code=exc.error_code, error=exc.message)
        except Exception:
            # A bug in pruning must not take the daemon down; the next day tries again.
            log.exception("retention.failed", error_code="INTERNAL_ERROR")
        await anyio.sleep(cfg.interval_h * 3600)
