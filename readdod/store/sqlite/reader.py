"""The store's reading connection, owned by one thread of its own.

A read is a whole function of the connection (one snapshot, many
statements) run in one hop to that thread and back, so a page of ``list``
costs one thread switch, not one per statement. The thread takes reads from
a queue in order and hands each answer back to the loop with
``call_soon_threadsafe``: the fewest steps per hop the standard library
offers (a single-worker executor adds its work items and a second future,
``anyio.to_thread`` a yield to the loop and a shared pool; both measured
slower per read).

A caller cancelled while its read waits in the queue drops it; one already
running finishes in the thread and its answer is dropped.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

#: A read waiting for the thread: the function, its arguments, where its answer goes.
_Request = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]


class Reader:
    """One read-only connection and the thread that uses it."""

    def __init__(self, path: Path, pragmas: list[str]) -> None:
        self._path = path
        self._pragmas = pragmas
        self._requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        #: Set by :meth:`close`; a read asked for after it would never be answered.
        self.closed = False
        self._thread = threading.Thread(target=self._serve, name="readdod-read", daemon=True)

    @classmethod
    async def open(cls, path: Path, pragmas: list[str]) -> Reader:
        """Start the thread, which connects and runs ``pragmas``."""
        reader = cls(path, pragmas)
        reader._thread.start()
        try:
            await reader.run(reader._connect)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await reader.close()
            raise
        return reader

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in the reader's thread."""
        if self.closed:
            raise RuntimeError("the reader is closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._requests.put((fn, args, future))
        return await future

    async def close(self) -> None:
        """Close the connection once the reads queued before have run."""
        if self.closed:
            return
        self.closed = True
        self._requests.put(None)
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._thread.join)

    def _connect(self, _: sqlite3.Connection | None) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None)
        try:
            for pragma in self._pragmas:
                conn.execute(pragma)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    def _serve(self) -> None:
        try:
            while (request := self._requests.get()) is not None:
                fn, args, future = request
                if future.cancelled():
                    continue
                try:
                    result = fn(self._conn, *args)
                except BaseException as exc:
                    _answer(future, None, exc)
                else:
                    _answer(future, result, None)
        finally:
            if self._conn is not None:
                self._conn.close()


def _answer(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    try:
        future.get_loop().call_soon_threadsafe(_settle, future, result, error)
    except RuntimeError:  # the loop is closed: nobody waits any more
        pass


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # its caller was cancelled
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
