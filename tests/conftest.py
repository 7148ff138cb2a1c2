from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """aiosqlite is asyncio-only."""
    return "asyncio"
