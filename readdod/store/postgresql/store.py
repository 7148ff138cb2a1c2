"""PostgreSQL: units of work on a pool of connections, each in a transaction of its own.

The seam's units are synchronous functions of a unit of work, so a unit
runs whole in a worker thread, on one connection the pool lends it, inside
one transaction: ``SERIALIZABLE`` for writes, so a read-check-write unit is
as safe as on SQLite's single writer while several daemons write at once;
``REPEATABLE READ READ ONLY`` for reads, one snapshot. At most as many units
run at once as the pool has connections.

PostgreSQL makes every commit durable itself and flushes the log of
concurrent commits together, so the SQLite store's group commit has no
counterpart here: its spirit (one fsync for many units) is the server's.

Two kinds of failure are waited out, never handed to the caller:

* a serialization failure or deadlock (another transaction won): the unit
  runs again, a few dozen times at most, after a short jittered wait;
* the database unreachable (down, restarting, failing over, out of
  connections): the unit runs again once it is back, however long that
  takes. ``store.unavailable`` is logged once per outage and
  ``store.available`` when it ends. Leases run out meanwhile, and the
  fencing token keeps a late write from landing; no item is failed for it.

A unit may therefore run twice, and one whose COMMIT was cut off may have
committed already: units are functions of the database alone and guarded
(compare-and-set on status and lease), as on SQLite.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import psycopg
import psycopg_pool
import stamina

from readdod.errors import InternalError, ShuttingDown, StoreBusy, StoreWriteFailed
from readdod.logging import get_logger
from readdod.store.api import NOTICE_MAX_BYTES
from readdod.store.postgresql import notifications
from readdod.store.postgresql.backup import dump_database, shown_dsn
from readdod.store.postgresql.schema import migrate
from readdod.store.postgresql.unit import PostgresUnitOfWork
from readdod.store.rows import BackupResult, StoreCounters

T = TypeVar("T")
log = get_logger("readdod.store")

#: Connections a daemon keeps by default: enough for its actors' commits, reads and loops.
POOL_SIZE = 8
#: How long a unit waits for a free connection before counting the database unreachable.
CONNECT_TIMEOUT_S = 5.0
#: Runs of a unit that lost to a concurrent transaction before the caller is told.
CONFLICT_ATTEMPTS = 30
#: The longest wait between two tries while the database is unreachable.
UNAVAILABLE_WAIT_MAX_S = 2.0

_WRITE = "BEGIN ISOLATION LEVEL SERIALIZABLE"
_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
#: SQLSTATEs of a transaction that lost to another: serialization failure, deadlock.
_CONFLICT = frozenset({"40001", "40P01"})
#: SQLSTATEs of a server going away or not taking connections yet.
_GONE = frozenset({"57P01", "57P02", "57P03", "53300"})


class StoreClosed(ShuttingDown):
    """The store no longer takes work (the daemon is stopping)."""


def _unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached now (worth waiting for)."""
    if isinstance(exc, psycopg_pool.PoolTimeout | psycopg.InterfaceError):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate
        return state is None or state.startswith("08") or state in _GONE
    return False


def _conflict(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.Error) and exc.sqlstate in _CONFLICT


def _store_error(exc: BaseException) -> BaseException:
    """What a caller is told of ``exc``: a database error as a store error, anything else as is."""
    if not isinstance(exc, psycopg.Error):
        return exc
    if _conflict(exc):
        return StoreBusy(
            "the database kept refusing this change because of concurrent ones; try again"
        )
    if exc.sqlstate is not None and exc.sqlstate.startswith("53"):
        return StoreWriteFailed(
            f"the PostgreSQL server is out of resources ({exc}): free disk space or memory"
            " on the database server, then send the request again"
        )
    return InternalError(f"database error: {exc}")


def _rollback(conn: psycopg.Connection[Any]) -> None:
    """Undo the open transaction; on a broken connection the pool throws it away instead."""
    if conn.broken:
        return
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        pass  # the error that made the unit fail is the one to report


class PostgresStore:
    """The database, opened with :meth:`open` for the life of a task group."""

    def __init__(self, pool: psycopg_pool.ConnectionPool, dsn: str, password: str | None) -> None:
        self._pool = pool
        self._dsn = dsn
        self._password = password
        self._limiter = anyio.CapacityLimiter(pool.max_size)
        self._closed = False
        #: Since when the database has been unreachable (monotonic seconds), if it is now.
        self._down_since: float | None = None
        #: Cumulative counters since open, for ``stats`` and the benchmarks.
        self.commits = 0
        self.units = 0
        self.statements = 0
        self.reads = 0
        self.read_statements = 0
        #: Units run again: after a serialization failure, or with the database back.
        self.conflicts = 0
        self.outages = 0

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        dsn: str,
        *,
        password: str | None = None,
        pool_size: int = POOL_SIZE,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> AsyncIterator[PostgresStore]:
        """Connect to ``dsn`` (a libpq connection string or URI; ``password`` beside it, kept
        out of the string), run the migrations it lacks, and hand out the store.

        An unreachable database is waited for, here as in every unit; a refused
        login, a missing database or a schema newer than this readdod fail at once.
        """
        kwargs: dict[str, Any] = {"autocommit": True, "application_name": "readdod"}
        if password is not None:
            kwargs["password"] = password
        pool = psycopg_pool.ConnectionPool(
            dsn,
            kwargs=kwargs,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=connect_timeout_s,
            # Keep trying to connect for as long as the database is away: the units wait.
            reconnect_timeout=24 * 3600.0,
            name="readdod",
        )
        store = cls(pool, dsn, password)
        try:
            await anyio.to_thread.run_sync(pool.open)
            await store._call(store._migrate)
            yield store
        finally:
            store._closed = True
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(pool.close)

    def _migrate(self) -> int:
        with self._pool.connection() as conn:
            return migrate(conn)

    # --- running units -------------------------------------------------------------

    async def _call(self, job: Callable[[], T]) -> T:
        """``job()`` in a worker thread, run again after a conflict or an outage."""
        conflicts = 0

        def again(exc: Exception) -> bool:
            nonlocal conflicts
            if self._closed and not isinstance(exc, StoreClosed):
                return False
            if _unavailable(exc):
                self._went_down(exc)
                return True
            if _conflict(exc):
                conflicts += 1
                self.conflicts += 1
                return conflicts < CONFLICT_ATTEMPTS
            return False

        async for attempt in stamina.retry_context(
            on=again,
            attempts=None,
            timeout=None,
            wait_initial=0.005,
            wait_max=UNAVAILABLE_WAIT_MAX_S,
            wait_jitter=0.05,
        ):
            with attempt:
                if self._closed:
                    raise StoreClosed("readdod is shutting down; try again when it is back")
                result = await anyio.to_thread.run_sync(job, limiter=self._limiter)
                if self._down_since is not None:
                    self._came_back()
                return result
        raise AssertionError("unreachable: stamina retries without limit or raises")

    def _went_down(self, exc: BaseException) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            self.outages += 1
            log.warning(
                "store.unavailable",
                backend="postgresql",
                error=str(exc).strip() or type(exc).__name__,
                hint="readdod waits for the database and retries; no item fails for it",
            )

    def _came_back(self) -> None:
        down = self._down_since or time.monotonic()
        self._down_since = None
        log.info(
            "store.available",
            backend="postgresql",
            down_ms=round((time.monotonic() - down) * 1000, 1),
        )

    def _unit(self, fn: Callable[[PostgresUnitOfWork], T], begin: str) -> tuple[T, int]:
        """In a worker thread: ``fn`` inside one transaction; (its result, statements)."""
        with self._pool.connection() as conn:
            conn.execute(begin)
            tx = PostgresUnitOfWork(conn)
            try:
                result = fn(tx)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT" if begin is _WRITE else "ROLLBACK")
            return result, tx.statements + 2

    async def write(self, fn: Callable[[PostgresUnitOfWork], T], *, alone: bool = False) -> T:
        """Run a unit of work in a transaction of its own; returns after its commit.

        ``alone`` needs nothing here: every unit has its own transaction, and a
        long one (a retention prune) holds up no other.
        """
        try:
            result, statements = await self._call(lambda: self._unit(fn, _WRITE))
        except psycopg.Error as exc:
            raise _store_error(exc) from exc
        self.commits += 1
        self.units += 1
        self.statements += statements
        return result

    async def read(self, fn: Callable[[PostgresUnitOfWork], T]) -> T:
        """Run read-only queries on one snapshot."""
        try:
            result, statements = await self._call(lambda: self._unit(fn, _READ))
        except psycopg.Error as exc:
            raise _store_error(exc) from exc
        self.reads += 1
        self.read_statements += statements
        return result

    def counters(self) -> StoreCounters:
        return StoreCounters(
            transactions=self.commits,
            units=self.units,
            statements=self.statements,
            reads=self.reads,
            read_statements=self.read_statements,
        )

    async def reclaim(self) -> None:
        """VACUUM the tables a prune shrinks, so their freed space is reused (PostgreSQL
        keeps the files' size; ``VACUUM FULL`` would lock them)."""

        def vacuum() -> None:
            with self._pool.connection() as conn:
                conn.execute("VACUUM artifacts, events, runs, attempts, chunks")

        try:
            await self._call(vacuum)
        except psycopg.Error as exc:
            raise _store_error(exc) from exc

    async def backup(self, dest: str | Path) -> BackupResult:
        """A consistent copy of the database at ``dest``, made by ``pg_dump`` (custom format,
        for ``pg_restore``); BackupUnsupported, naming the command to run, when it cannot."""
        return await dump_database(self._dsn, self._password, dest)

    async def notify(self, payload: str) -> None:
        if len(payload.encode()) > NOTICE_MAX_BYTES:
            raise ValueError(f"a notice is at most {NOTICE_MAX_BYTES} bytes")

        def send() -> None:
            with self._pool.connection() as conn:
                notifications.notify(conn, payload)

        try:
            await self._call(send)
        except psycopg.Error as exc:
            raise _store_error(exc) from exc

    def listen(self) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        return notifications.listen(self._dsn, self._password)

    @property
    def dsn(self) -> str:
        """The connection string without its password, as logs and messages show it."""
        return shown_dsn(self._dsn)
