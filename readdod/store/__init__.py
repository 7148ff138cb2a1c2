"""The store: the only package that speaks SQL (its SQLite implementation is ``sqlite/``).

It imports nothing above it (no core, supervisor, control or CLI). Callers are typed to
the Protocols of :mod:`readdod.store.api`; ``Store`` here is the SQLite store daemons open.
"""

from readdod.store.api import UnitOfWork
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

#: The store daemons open today. The seam callers are typed to is the Protocol
#: :class:`readdod.store.api.Store`.
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
    "UnitOfWork",
]
