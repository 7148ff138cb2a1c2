from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from readdod.runtime import logging as rlog
from tests import pg
from tests.daemon_proc import DaemonProc


def pytest_configure(config: pytest.Config) -> None:
    """Log lines of in-process code are rendered as in the daemon, then dropped.

    Tests that read lines configure their own sink (``rlog.redirected``) or
    capture them (``structlog.testing.capture_logs``).
    """
    rlog.configure("info", _Discard())


class _Discard(io.StringIO):
    """A stream that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


@pytest.fixture(scope="session", autouse=True)
def _postgresql_cluster() -> Iterator[None]:
    """The throwaway PostgreSQL cluster (tests/pg.py) is started by the first test that
    asks for it, and stopped here, at the end of the session, if one did."""
    try:
        yield
    finally:
        pg.stop_shared()


@pytest.fixture
def pg_cluster() -> pg.Cluster:
    """The session's PostgreSQL cluster; ``new_database()`` gives a test its own database."""
    return pg.shared()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    """The store a daemon under test runs on; a test asking for it runs on both."""
    return str(request.param)


@pytest.fixture
def store_sections(backend: str) -> dict[str, dict[str, Any]]:
    """Config sections that put a daemon's store on ``backend``: none for SQLite (the
    default), a new database of the session's cluster for PostgreSQL."""
    if backend == "sqlite":
        return {}
    return {"store": {"backend": "postgresql", "dsn": pg.shared().new_database()}}


@pytest.fixture
def anyio_backend() -> str:
    """The store is asyncio-only (its futures and the hops to its threads)."""
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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Figures a passing test recorded with ``record_property("figures", ...)`` (capture
    latency, crashes survived), shown after the run, also from xdist workers."""
    lines = [
        f"{report.nodeid}: {value}"
        for report in terminalreporter.getreports("passed")
        for name, value in report.user_properties
        if name == "figures"
    ]
    if lines:
        terminalreporter.section("figures")
        for text in lines:
            terminalreporter.line(text)
