"""The store: the only package that speaks SQL (its SQLite implementation is ``sqlite/``).

It imports nothing above it (no orchestrator, supervisor, control or CLI).
"""

from readdod.store.rows import (
    ArtifactRow,
    AttemptRow,
    BackupResult,
    ChunkRow,
    EventRow,
    ExportRow,
    ItemRow,
    RunRow,
    StoreCounters,
)
from readdod.store.sqlite import SCHEMA_VERSION, SqliteStore, SqliteUnitOfWork, StoreClosed, Tx

#: The store daemons open today.
Store = SqliteStore

__all__ = [
    "SCHEMA_VERSION",
    "ArtifactRow",
    "AttemptRow",
    "BackupResult",
    "ChunkRow",
    "EventRow",
    "ExportRow",
    "ItemRow",
    "RunRow",
    "SqliteStore",
    "SqliteUnitOfWork",
    "Store",
    "StoreClosed",
    "StoreCounters",
    "Tx",
]
