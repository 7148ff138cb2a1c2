"""The store seam: what the core asks of a database, as named methods only.

:class:`Store` runs units of work; a :class:`UnitOfWork` is the one view of
the data a unit gets, every query a method with a name. No SQL, no driver
type and no connection crosses this seam, so a second implementation
(PostgreSQL, or one in memory for a test) is a class with these methods
that passes the contract tests in ``tests/store_contract/``.

Rows come and go as the Structs of :mod:`readdod.store.rows`. Times are
integer milliseconds since the epoch. A unit of work is synchronous on
purpose: it runs whole inside one transaction, so a read-check-write
sequence within it is atomic.

The queries are grouped by concept, one Protocol each (items, leases, runs,
artifacts, records, reports, todos, feeds); :class:`UnitOfWork` is all of them, and a unit
asks for no less.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Final, Protocol, TypeVar

from readdod.store.api.artifacts import ArtifactQueries, StepSlot
from readdod.store.api.daemons import DaemonQueries
from readdod.store.api.feeds import FeedQueries
from readdod.store.api.items import ItemQueries
from readdod.store.api.leases import LeaseQueries
from readdod.store.api.records import RecordQueries
from readdod.store.api.reports import ReportQueries
from readdod.store.api.runs import RunQueries
from readdod.store.api.todos import TodoQueries
from readdod.store.rows import BackupResult, StoreCounters

T = TypeVar("T")
#: The largest notice :meth:`Store.notify` carries (PostgreSQL's NOTIFY takes under 8000 bytes).
NOTICE_MAX_BYTES: Final = 7900


class UnitOfWork(
    ItemQueries,
    LeaseQueries,
    RunQueries,
    ArtifactQueries,
    RecordQueries,
    ReportQueries,
    FeedQueries,
    TodoQueries,
    DaemonQueries,
    Protocol,
):
    """The named queries one unit of work may run, inside the store's transaction.

    Whatever a unit wrote, it reads back within the same unit; whatever it
    wrote is gone if it raises. Methods that take ``**fields`` accept column
    names of the row Struct they update (never its key nor its creation time).
    """


class Store(Protocol):
    """A database that runs units of work, each atomic and, once written, durable."""

    async def write(
        self, fn: Callable[[UnitOfWork], T], *, alone: bool = False, slot: StepSlot | None = None
    ) -> T:
        """Run ``fn`` in a transaction; return once it is durable. If ``fn`` raises,
        its writes are undone (and only its own) and the error is raised here.

        ``alone``: a long unit (a retention prune) that must not hold up the others.
        ``slot``: the step slot ``fn`` reads first, if it reads one; a store where
        each statement is a round trip may read a batch's slots in one.
        """
        ...

    async def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        """Run ``fn`` on one consistent snapshot of what is committed."""
        ...

    def counters(self) -> StoreCounters:
        """Work done since the store opened (``stats``, benchmarks)."""
        ...

    async def reclaim(self) -> None:
        """Give the space that pruning freed back to the file system."""
        ...

    async def backup(self, dest: str | Path) -> BackupResult:
        """A consistent copy of the whole database at ``dest``, while work goes on."""
        ...

    async def notify(self, payload: str) -> None:
        """Hand ``payload`` (at most :data:`NOTICE_MAX_BYTES` of UTF-8) to every listener of
        this database, in this process or another (PostgreSQL: ``NOTIFY``)."""
        ...

    def listen(self) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        """The payloads notified from now on, in the order they were sent, until the block
        ends. Best effort: a listener that falls behind, or whose connection drops, loses
        notices, so what it is told must also be found another way (a poll)."""
        ...


__all__ = [
    "NOTICE_MAX_BYTES",
    "ArtifactQueries",
    "DaemonQueries",
    "FeedQueries",
    "ItemQueries",
    "LeaseQueries",
    "RecordQueries",
    "ReportQueries",
    "RunQueries",
    "StepSlot",
    "Store",
    "TodoQueries",
    "UnitOfWork",
]
