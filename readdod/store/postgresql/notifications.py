"""Notices between the daemons that share a PostgreSQL database: ``LISTEN``/``NOTIFY``.

:func:`notify` sends on a pooled connection (``pg_notify``, in autocommit,
so the notice goes out at once, after the commit whose notes it carries);
:func:`listen` holds a connection of its own, outside the pool, that
``LISTEN``s on the channel for as long as its block runs. PostgreSQL
delivers a notice to every listening session of the same database, the
sender's included, in the order they were sent, within milliseconds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import psycopg

from readdod.errors import StoreBusy

#: The channel every readdod daemon of a database listens on.
CHANNEL: Final = "readdod"


def notify(conn: psycopg.Connection[Any], payload: str) -> None:
    """Send ``payload`` on :data:`CHANNEL` (``conn`` in autocommit)."""
    conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))


async def _heard(conn: psycopg.AsyncConnection[Any]) -> AsyncGenerator[str, None]:
    try:
        async for notice in conn.notifies():
            yield notice.payload
    except psycopg.Error as exc:
        raise StoreBusy(
            f"the connection listening for the other daemons' notices was lost ({exc})"
        ) from exc


@asynccontextmanager
async def listen(dsn: str, password: str | None) -> AsyncIterator[AsyncIterator[str]]:
    """The payloads sent on :data:`CHANNEL` from now on, on a connection of their own."""
    kwargs: dict[str, Any] = {"autocommit": True, "application_name": "readdod-listen"}
    if password is not None:
        kwargs["password"] = password
    try:
        conn = await psycopg.AsyncConnection.connect(dsn, **kwargs)
    except psycopg.Error as exc:
        raise StoreBusy(f"cannot listen for the other daemons' notices ({exc})") from exc
    try:
        await conn.execute(f"LISTEN {CHANNEL}")
        heard = _heard(conn)
        try:
            yield heard
        finally:
            await heard.aclose()
    finally:
        await conn.close()
