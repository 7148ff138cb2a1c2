"""The SQLite store: group commit on one writer, a reader thread, named SQL.

The only package that imports ``sqlite3`` or writes SQL.
"""

from readdod.store.sqlite.executor import SqliteUnitOfWork
from readdod.store.sqlite.schema import SCHEMA_VERSION
from readdod.store.sqlite.store import CHECKPOINT_EVERY, WAL_PAGES_MAX, SqliteStore, StoreClosed

#: The name callers have used for the unit of work.
Tx = SqliteUnitOfWork

__all__ = [
    "CHECKPOINT_EVERY",
    "SCHEMA_VERSION",
    "WAL_PAGES_MAX",
    "SqliteStore",
    "SqliteUnitOfWork",
    "StoreClosed",
]
