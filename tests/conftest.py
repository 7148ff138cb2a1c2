from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.daemon_proc import DaemonProc


@pytest.fixture
def anyio_backend() -> str:
    """aiosqlite is asyncio-only."""
    return "asyncio"


@pytest.fixture
def daemons() -> Iterator[list[DaemonProc]]:
    """Daemons a test starts; every one is stopped afterwards, pass or fail."""
    made: list[DaemonProc] = []
    try:
        yield made
    finally:
        for d in made:
            d.close()
