"""The SQLite store: the only module that speaks SQL.

It imports nothing above it (no orchestrator, supervisor, control or CLI).
"""

from readdod.store.api import UnitOfWork
from readdod.store.queries import Tx
from readdod.store.rows import (
    ArtifactRow,
    AttemptRow,
    ChunkRow,
    EventRow,
    ExportRow,
    ItemRow,
    RunRow,
)
from readdod.store.sqlite import SCHEMA_VERSION, Store, StoreClosed

__all__ = [
    "SCHEMA_VERSION",
    "ArtifactRow",
    "AttemptRow",
    "ChunkRow",
    "EventRow",
    "ExportRow",
    "ItemRow",
    "RunRow",
    "Store",
    "StoreClosed",
    "Tx",
    "UnitOfWork",
]
