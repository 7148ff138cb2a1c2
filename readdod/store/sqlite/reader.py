"""The store's reading connection, owned by one thread of its own.

A read is a whole function of the connection (one snapshot, many
statements) run in one hop to that thread and back, so a page of ``list``
costs one thread switch, not one per statement. The thread is a
single-worker executor: a connection used by one thread at a time, read
requests queued in order, and the answer handed back to the loop with
``call_soon_threadsafe`` (``asyncio.wrap_future``), cheaper per hop than
``anyio.to_thread``, which first yields to the loop and then picks a thread
from a shared pool.

A caller cancelled while its read waits in the queue drops it; one already
running finishes in the thread and its answer is dropped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


class Reader:
    """One read-only connection and the thread that uses it."""

    def __init__(self, thread: concurrent.futures.ThreadPoolExecutor, conn: sqlite3.Connection):
        self._thread = thread
        self._conn = conn

    @classmethod
    async def open(cls, path: Path, pragmas: list[str]) -> Reader:
        """Connect in the reader's own thread, then run ``pragmas`` there."""
        thread = concurrent.futures.ThreadPoolExecutor(1, "readdod-read")
        try:
            conn = await asyncio.wrap_future(thread.submit(_connect, path, pragmas))
        except BaseException:
            thread.shutdown(wait=False)
            raise
        return cls(thread, conn)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in the reader's thread."""
        return await asyncio.wrap_future(self._thread.submit(fn, self._conn, *args))

    async def close(self) -> None:
        """Close the connection once the reads queued before have run."""
        with anyio.CancelScope(shield=True):
            await asyncio.wrap_future(self._thread.submit(self._conn.close))
        self._thread.shutdown(wait=False)


def _connect(path: Path, pragmas: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in pragmas:
            conn.execute(pragma)
    except BaseException:
        conn.close()
        raise
    return conn
