"""The SQLite store: group commit on one writer, a reader thread, named SQL.

The only package that imports ``sqlite3`` or writes SQL.
"""

from readdod.store.sqlite.schema import SCHEMA_VERSION
from readdod.store.sqlite.store import CHECKPOINT_EVERY, WAL_PAGES_MAX, SqliteStore, StoreClosed
from readdod.store.sqlite.unit import SqliteUnitOfWork, Tx

__all__ = [
    "CHECKPOINT_EVERY",
    "SCHEMA_VERSION",
    "WAL_PAGES_MAX",
    "SqliteStore",
    "SqliteUnitOfWork",
    "StoreClosed",
    "Tx",
]
