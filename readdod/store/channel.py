"""Notices between the users of one database inside one process: the SQLite store's
(and the in-memory store's) side of :meth:`readdod.store.api.Store.notify`.

A SQLite database has one daemon (its instance lock), so its notices never
need to leave the process; every store opened on the same file in this
process shares one :class:`LocalChannel`, as every connection to one
PostgreSQL database shares its ``LISTEN``/``NOTIFY``. Sending never waits: a
listener that falls :data:`BUFFER` notices behind loses the newest ones.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

#: Notices a listener may have unread before newer ones are dropped for it.
BUFFER: Final = 1024


class LocalChannel:
    """Fan-out of notices to the listeners of one database in this process."""

    def __init__(self) -> None:
        self._listeners: list[MemoryObjectSendStream[str]] = []
        #: Notices dropped because a listener was too far behind.
        self.dropped = 0

    def send(self, payload: str) -> None:
        for out in list(self._listeners):
            try:
                out.send_nowait(payload)
            except anyio.WouldBlock:
                self.dropped += 1
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._listeners.remove(out)

    @asynccontextmanager
    async def listen(self) -> AsyncIterator[MemoryObjectReceiveStream[str]]:
        send, receive = anyio.create_memory_object_stream[str](BUFFER)
        self._listeners.append(send)
        try:
            with receive:
                yield receive
        finally:
            if send in self._listeners:
                self._listeners.remove(send)
            send.close()


class _Entry:
    def __init__(self) -> None:
        self.channel = LocalChannel()
        self.users = 0


_OPEN: dict[Path, _Entry] = {}


@contextmanager
def for_database(path: Path) -> Iterator[LocalChannel]:
    """The channel of the database at ``path``, shared while any store has it open."""
    key = path.resolve()
    entry = _OPEN.get(key)
    if entry is None:
        entry = _OPEN[key] = _Entry()
    entry.users += 1
    try:
        yield entry.channel
    finally:
        entry.users -= 1
        if not entry.users:
            del _OPEN[key]
