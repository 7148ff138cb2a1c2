"""A store held in memory: the shared unit of work over SQLite's ``:memory:``, run plainly.

No group commit, no reader thread, no commit thread: each unit is BEGIN, the
unit, the rows it held back, COMMIT, on the event loop. Beside the daemon's
two stores, the contract runs the shared logic of :mod:`readdod.store.unit`
on the plainest store that fills the seam, so what it proves does not lean
on either store's machinery.

The database of one path is shared by every store open on it, and copied to
that path (SQLite's backup API) when the last of them closes, so a store
reopened finds what was committed; :meth:`MemoryStore.backup` writes the same
file, so a backup opens as a store.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.lowlevel

from readdod.errors import ShuttingDown
from readdod.store.api import NOTICE_MAX_BYTES, StepSlot, Store, UnitOfWork
from readdod.store.channel import LocalChannel
from readdod.store.rows import BackupResult, StoreCounters
from readdod.store.sqlite.backup import target_path
from readdod.store.sqlite.executor import SqliteUnitOfWork
from readdod.store.sqlite.schema import migrate
from readdod.store.sqlite.store import store_error

T = TypeVar("T")


def _copy(src: sqlite3.Connection, path: Path) -> int:
    """``src`` written whole to the file ``path``; its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    dest = sqlite3.connect(path)
    try:
        src.backup(dest)
    finally:
        dest.close()
    return path.stat().st_size


class _Shared:
    """One database in memory, how many stores have it open, and their notices."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        if path.is_file():
            saved = sqlite3.connect(path)
            try:
                saved.backup(self.conn)
            finally:
                saved.close()
        self.conn.execute("PRAGMA foreign_keys = ON")
        migrate(self.conn)
        self.users = 0
        self.channel = LocalChannel()


#: The databases open in this process, by path.
_OPEN: dict[Path, _Shared] = {}


class MemoryStore:
    """The database of one path, opened with :meth:`open` for as long as a block runs."""

    def __init__(self, shared: _Shared) -> None:
        self._db = shared
        self._closed = False
        self._counts = dict.fromkeys(StoreCounters.__struct_fields__, 0)

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path) -> AsyncIterator[MemoryStore]:
        key = path.resolve()
        shared = _OPEN.get(key) or _OPEN.setdefault(key, _Shared(path))
        shared.users += 1
        store = cls(shared)
        try:
            yield store
        finally:
            store._closed = True
            shared.users -= 1
            if not shared.users:
                del _OPEN[key]
                _copy(shared.conn, path)
                shared.conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ShuttingDown("readdod is shutting down; try again when it is back")

    async def _unit(self, fn: Callable[[SqliteUnitOfWork], T], kind: str) -> T:
        self._check_open()
        await anyio.lowlevel.checkpoint()
        self._check_open()  # closed while the unit waited its turn
        conn = self._db.conn
        conn.execute("BEGIN")
        tx = SqliteUnitOfWork(conn)
        try:
            result = fn(tx)
            tx.flush()
        except BaseException as exc:
            conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise store_error(exc) from exc
            raise
        finally:
            self._counts[f"{kind}statements"] += tx.statements + 2
        conn.execute("COMMIT")
        if kind:
            self._counts["reads"] += 1
        else:
            self._counts["transactions"] += 1
            self._counts["units"] += 1
        return result

    async def write(
        self, fn: Callable[[UnitOfWork], T], *, alone: bool = False, slot: StepSlot | None = None
    ) -> T:
        """Run ``fn`` as one transaction; ``alone`` and ``slot`` change nothing, as no unit
        waits on another here."""
        return await self._unit(fn, "")

    async def read(self, fn: Callable[[UnitOfWork], T]) -> T:
        return await self._unit(fn, "read_")

    def counters(self) -> StoreCounters:
        return StoreCounters(**self._counts)

    async def notify(self, payload: str) -> None:
        if len(payload.encode()) > NOTICE_MAX_BYTES:
            raise ValueError(f"a notice is at most {NOTICE_MAX_BYTES} bytes")
        self._db.channel.send(payload)
        await anyio.lowlevel.checkpoint()

    def listen(self) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        return self._db.channel.listen()

    async def reclaim(self) -> None:
        """Nothing to give back: memory is freed as rows go."""
        await anyio.lowlevel.checkpoint()

    async def backup(self, dest: str | Path) -> BackupResult:
        """The database as it is now, in the file format :meth:`open` reads."""
        started = time.perf_counter()
        target = target_path(dest)
        size = _copy(self._db.conn, target)
        return BackupResult(
            path=str(target),
            bytes=size,
            pages=0,
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def opener(directory: Path) -> Callable[[], AbstractAsyncContextManager[Store]]:
    """Opens the one in-memory database of a test, kept in ``directory``."""
    path = directory / "contract.mem"

    def open_store() -> AbstractAsyncContextManager[Store]:
        return MemoryStore.open(path)

    return open_store


# mypy proves here that the store satisfies the Protocol structurally.
_STORE: type[Store] = MemoryStore
