"""The core: every status change in readdod goes through here.

Its parts share one :class:`~readdod.core.unit.Units`, which runs units of
work on the store and tells what they did after each commit:

- :mod:`~readdod.core.commands`: what people ask (capture, process, archive, ...);
- :mod:`~readdod.core.leases`: claim, renew, recover (the supervisor's side);
- :mod:`~readdod.core.book`: an actor's fenced writes under its lease;
- :mod:`~readdod.core.exporting`: a card written as a file, SHIPPED or FAILED_EXPORT;
- :mod:`~readdod.core.reads`: the read model (get, list, health, stats);
- :mod:`~readdod.core.todos`: a person's ticks on todos;
- :mod:`~readdod.core.maintenance`: retention and backups;
- :mod:`~readdod.core.feeds`: the feeds followed, and how their polls went.

The composition root (:mod:`readdod.service.daemon`) builds a :class:`Core` and
hands each caller the part it needs.
"""

from __future__ import annotations

from readdod.core.book import LeaseBook, LeaseChunks
from readdod.core.commands import Commands
from readdod.core.exporting import Exports
from readdod.core.feeds import Feeds
from readdod.core.leases import Claimed, Lease, Leases
from readdod.core.maintenance import Maintenance
from readdod.core.reads import ReadModel
from readdod.core.runs import RunPolicy
from readdod.core.todos import TodoTicks
from readdod.core.unit import Units
from readdod.core.workers import Workers
from readdod.export.writer import Exporter
from readdod.runtime.clock import Clock
from readdod.runtime.events import EventBus
from readdod.settings.config import FetchConfig, RetentionConfig, RetryConfig
from readdod.store.api import Store

__all__ = [
    "Claimed",
    "Core",
    "Lease",
    "LeaseBook",
    "LeaseChunks",
    "Leases",
    "RunPolicy",
    "Workers",
]


class Core:
    """The core's parts, built over one store and one clock."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        auto_process: bool = True,
        max_orphanings: int = 3,
        retry: RetryConfig | None = None,
        skip_below: int = 0,
        exporter: Exporter | None = None,
        max_capture_bytes: int = FetchConfig().max_bytes,
        retention: RetentionConfig | None = None,
    ) -> None:
        policy = RunPolicy(
            retry=retry or RetryConfig(), skip_below=skip_below, max_orphanings=max_orphanings
        )
        self.store = store
        self.clock = clock
        self.units = Units(store, clock)
        self.commands = Commands(
            self.units,
            auto_process=auto_process,
            max_capture_bytes=max_capture_bytes,
            retry=policy.retry,
        )
        self.leases = Leases(self.units, policy)
        self.book = LeaseBook(self.units, policy)
        self.exports = Exports(self.units, exporter or Exporter())
        self.reads = ReadModel(self.units)
        self.todos = TodoTicks(self.units)
        self.maintenance = Maintenance(self.units, retention)
        self.feeds = Feeds(self.units, clock)

    @property
    def bus(self) -> EventBus:
        """Committed events for ``watch`` subscribers."""
        return self.units.bus

    def attach(self, workers: Workers) -> None:
        """Let ``workers`` be woken by queued work, take captures at once, and be told of
        cancels and pauses."""
        self.commands.workers = workers
        self.units.on_enqueue(workers.wake)
