"""The store implementations the contract runs against, each on a fresh database.

A test asks for ``store`` (opened for the test) or ``open_store`` (to close
and reopen the same database). A new implementation adds itself to
:data:`IMPLEMENTATIONS`; every contract test then runs against it too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from readdod.store import SqliteStore, Store
from readdod.store.postgresql import PostgresStore
from tests import pg
from tests.store_contract import memory

#: Opens the one database of a test, as often as the test asks.
Opener = Callable[[], AbstractAsyncContextManager[Store]]

# mypy checks here that the stores satisfy the Protocol structurally.
_SQLITE: type[Store] = SqliteStore
_POSTGRES: type[Store] = PostgresStore


def _sqlite(tmp_path: Path) -> Opener:
    path = tmp_path / "contract.db"

    def opener() -> AbstractAsyncContextManager[Store]:
        return SqliteStore.open(path)

    return opener


def _postgresql(tmp_path: Path) -> Opener:
    """A new database of the session's throwaway cluster (tests/pg.py)."""
    dsn = pg.shared().new_database()

    def opener() -> AbstractAsyncContextManager[Store]:
        return PostgresStore.open(dsn)

    return opener


#: Every store implementation, by name: given a test's own directory, its opener.
IMPLEMENTATIONS: dict[str, Callable[[Path], Opener]] = {
    "memory": memory.opener,
    "sqlite": _sqlite,
    "postgresql": _postgresql,
}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return IMPLEMENTATIONS[request.param](tmp_path)


@pytest.fixture
async def store(open_store: Opener) -> AsyncIterator[Store]:
    async with open_store() as opened:
        yield opened
