"""The store: the only package that speaks SQL (``sqlite/``, and ``postgresql/`` for a fleet).

It imports nothing above it (no core, supervisor, control or CLI). Callers are typed to
the Protocols of :mod:`readdod.store.api` (``Store`` here is that Protocol); the stores
are :class:`SqliteStore` and ``postgresql.PostgresStore``, both running the one unit of
work of :mod:`readdod.store.unit`.
"""

from typing import TYPE_CHECKING, Any

from readdod.store.api import Store, UnitOfWork
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

if TYPE_CHECKING:
    from readdod.store.sqlite import (
        SCHEMA_VERSION,
        SqliteStore,
        SqliteUnitOfWork,
        StoreClosed,
    )

#: What ``readdod.store`` hands out of the SQLite implementation, loaded on first use,
#: so that the row Structs and the Protocols import no database driver.
_SQLITE = frozenset({"SCHEMA_VERSION", "SqliteStore", "SqliteUnitOfWork", "StoreClosed"})


def __getattr__(name: str) -> Any:
    if name in _SQLITE:
        from readdod.store import sqlite

        return getattr(sqlite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "UnitOfWork",
]
