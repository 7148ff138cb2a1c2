"""The PostgreSQL unit of work: every named operation readdod asks of its database.

A :class:`PostgresUnitOfWork` wraps a psycopg connection inside a
transaction the store opened. Its methods are synchronous, as the seam
wants: a whole unit runs in one worker thread, statement after statement on
one connection, so a read-check-write sequence is inside one transaction.
The operations are written one concept a module, each a mixin over
:mod:`readdod.store.postgresql.base`, grouped as the Protocols of
:mod:`readdod.store.api` are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from readdod.store.postgresql.artifacts import PostgresArtifactQueries
from readdod.store.postgresql.daemons import PostgresDaemonQueries
from readdod.store.postgresql.feeds import PostgresFeedQueries
from readdod.store.postgresql.items import PostgresItemQueries
from readdod.store.postgresql.leases import PostgresLeaseQueries
from readdod.store.postgresql.records import PostgresRecordQueries
from readdod.store.postgresql.reports import PostgresReportQueries
from readdod.store.postgresql.runs import PostgresRunQueries
from readdod.store.postgresql.todos import PostgresTodoQueries

if TYPE_CHECKING:
    from readdod.store.api import (
        ArtifactQueries,
        FeedQueries,
        ItemQueries,
        LeaseQueries,
        RecordQueries,
        ReportQueries,
        RunQueries,
        TodoQueries,
        UnitOfWork,
    )


class PostgresUnitOfWork(
    PostgresItemQueries,
    PostgresLeaseQueries,
    PostgresRunQueries,
    PostgresArtifactQueries,
    PostgresRecordQueries,
    PostgresReportQueries,
    PostgresTodoQueries,
    PostgresDaemonQueries,
    PostgresFeedQueries,
):
    """Named operations over one connection, inside the store's transaction."""


if TYPE_CHECKING:
    # mypy proves each concept against its own Protocol.
    _ITEMS: type[ItemQueries] = PostgresItemQueries
    _LEASES: type[LeaseQueries] = PostgresLeaseQueries
    _RUNS: type[RunQueries] = PostgresRunQueries
    _ARTIFACTS: type[ArtifactQueries] = PostgresArtifactQueries
    _RECORDS: type[RecordQueries] = PostgresRecordQueries
    _REPORTS: type[ReportQueries] = PostgresReportQueries
    _TODOS: type[TodoQueries] = PostgresTodoQueries
    _FEEDS: type[FeedQueries] = PostgresFeedQueries
    _UNIT: type[UnitOfWork] = PostgresUnitOfWork
