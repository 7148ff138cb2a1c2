"""The SQLite unit of work: every named operation readdod asks of its database.

A :class:`SqliteUnitOfWork` wraps a ``sqlite3.Connection`` inside a
transaction that the store opened. Its methods are synchronous on purpose: a
whole unit of work runs in one hop (on the loop for writes, in the reader's
thread for reads), so a read-check-write sequence is atomic (writers are
serialised by ``BEGIN IMMEDIATE``) and costs no thread switch per statement.
Static statements come from the files of ``sql/`` by name; what is composed
per call (the columns a caller sets, ``IN`` lists, the conditions of a
listing) is composed in the module of its concept.

The operations are written one concept a module, each a mixin over the
plumbing of :mod:`readdod.store.sqlite.base`, in the same grouping as the
Protocols of :mod:`readdod.store.api`. Composing them here costs nothing per
call: a method is found on the class as if it were written there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from readdod.store.sqlite.artifacts import SqliteArtifactQueries
from readdod.store.sqlite.daemons import SqliteDaemonQueries
from readdod.store.sqlite.feeds import SqliteFeedQueries
from readdod.store.sqlite.items import SEARCH_WORDS_MAX, SqliteItemQueries, search_query
from readdod.store.sqlite.leases import SqliteLeaseQueries
from readdod.store.sqlite.records import SqliteRecordQueries
from readdod.store.sqlite.reports import SqliteReportQueries
from readdod.store.sqlite.runs import SqliteRunQueries
from readdod.store.sqlite.todos import SqliteTodoQueries

if TYPE_CHECKING:
    from readdod.store.api import (
        ArtifactQueries,
        DaemonQueries,
        FeedQueries,
        ItemQueries,
        LeaseQueries,
        RecordQueries,
        ReportQueries,
        RunQueries,
        TodoQueries,
    )


class SqliteUnitOfWork(
    SqliteItemQueries,
    SqliteLeaseQueries,
    SqliteRunQueries,
    SqliteArtifactQueries,
    SqliteRecordQueries,
    SqliteReportQueries,
    SqliteFeedQueries,
    SqliteTodoQueries,
    SqliteDaemonQueries,
):
    """Named operations over one connection, inside the store's transaction.

    Every concept's operations over the one connection and write buffer of
    :class:`~readdod.store.sqlite.base.SqliteUnitBase`.
    """


if TYPE_CHECKING:
    # mypy proves each concept against its own Protocol, so a missing or
    # mistyped method is reported beside its concept.
    _ITEMS: type[ItemQueries] = SqliteItemQueries
    _LEASES: type[LeaseQueries] = SqliteLeaseQueries
    _RUNS: type[RunQueries] = SqliteRunQueries
    _FEEDS: type[FeedQueries] = SqliteFeedQueries
    _ARTIFACTS: type[ArtifactQueries] = SqliteArtifactQueries
    _RECORDS: type[RecordQueries] = SqliteRecordQueries
    _REPORTS: type[ReportQueries] = SqliteReportQueries
    _TODOS: type[TodoQueries] = SqliteTodoQueries
    _DAEMONS: type[DaemonQueries] = SqliteDaemonQueries

#: The name callers have used for the unit of work.
Tx = SqliteUnitOfWork

__all__ = ["SEARCH_WORDS_MAX", "SqliteUnitOfWork", "Tx", "search_query"]
