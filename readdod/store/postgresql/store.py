"""PostgreSQL: units of work group-committed on a pool of connections.

The seam's units are synchronous functions of a unit of work, so units run
in worker threads, on a connection the pool lends, inside a transaction:
``READ COMMITTED`` for writes, the level job queues on PostgreSQL run at
(procrastinate, River, Oban), ``REPEATABLE READ READ ONLY`` for reads, one
snapshot per read. At most as many transactions run at once as the pool
has connections.

A unit's read-check-write is kept as safe as on SQLite's single writer while
several daemons write at once by the statements themselves: every status
change is a compare-and-set, which PostgreSQL re-checks after waiting for a
row another transaction holds; a lease check (``holds_lease``,
``step_slot``) locks the item's row until the unit commits, so no claim or
requeue slips between the check and the writes it allows; claims and
requeues lock what they take with ``SKIP LOCKED``; and what must be unique
is (a capture's id, an artifact's version), so the loser of a race fails
with a unique violation and runs again, finding the winner's row.
``SERIALIZABLE`` would give the same guarantees by aborting whole units,
measured at a few hundred aborts a second under a daemon's load.

Group commit, as on SQLite: a write is queued, and each of the store's
writer tasks takes whatever is waiting as one batch, runs its units in one
transaction (one thread hop, one BEGIN, one COMMIT for the lot) and answers
every caller once it is durable. Several writers, each on its own pooled
connection, commit side by side. A batch first runs without savepoints;
should any unit raise, it runs again with a savepoint around each unit, so
only the failing units lose their writes. ``alone`` units (a retention
prune) and reads run one per transaction.

Two kinds of failure are waited out, never handed to the caller:

* a deadlock, a serialization failure or a unique violation (another
  transaction won a race): the unit runs again, a few dozen times at most
  (a unique violation, that a second run would meet again if it is not a
  race, three times), after a short jittered wait;
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

import asyncio
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import psycopg
import psycopg_pool
import stamina
import stamina.instrumentation

from readdod.errors import (
    InternalError,
    ShuttingDown,
    StoreAuthFailed,
    StoreBusy,
    StoreWriteFailed,
)
from readdod.runtime.dsn import redact
from readdod.runtime.logging import get_logger
from readdod.store.api import NOTICE_MAX_BYTES, StepSlot
from readdod.store.postgresql import notifications
from readdod.store.postgresql.backup import dump_database
from readdod.store.postgresql.executor import PostgresUnitOfWork
from readdod.store.postgresql.schema import migrate
from readdod.store.rows import BackupResult, StoreCounters

T = TypeVar("T")
log = get_logger("readdod.store")

# The store logs an outage itself (store.unavailable); stamina's default hooks would add
# an undocumented line per retry (as readdod.runtime.retrying says for in-step retries).
stamina.instrumentation.set_on_retry_hooks([])

#: Connections a daemon keeps by default: enough for its actors' commits, reads and loops.
POOL_SIZE = 8
#: Units one transaction runs at most (group commit).
MAX_BATCH = 64
#: How long a unit waits for a free connection before counting the database unreachable.
CONNECT_TIMEOUT_S = 5.0
#: Runs of a unit that lost to a concurrent transaction before the caller is told.
CONFLICT_ATTEMPTS = 30
#: A session left inside a transaction this long is ended by the server, and its row
#: locks with it: a daemon frozen mid-unit (a paused VM, SIGSTOP) cannot keep the items
#: it locked from the daemons that take its expired leases over.
IDLE_IN_TRANSACTION_MS = 10_000
#: The longest wait between two tries while the database is unreachable.
UNAVAILABLE_WAIT_MAX_S = 2.0
#: At start, the first wait for a server that is down, and the longest (doubling between).
START_WAIT_S = 0.5
START_WAIT_MAX_S = 30.0
#: On close, how long the writers may take to commit what is queued before they are
#: given up on (a server away would keep them forever; their units are guarded).
CLOSE_WAIT_S = 1.0
#: How long closing the pool waits for its own threads (a reconnect under way).
POOL_CLOSE_WAIT_S = 1.0

_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
#: SQLSTATEs of a transaction that lost to another: serialization failure, deadlock.
_CONFLICT = frozenset({"40001", "40P01"})
#: Runs of a unit that met a unique violation: a race lost runs again and finds the
#: winner's row; a second violation is the unit's own mistake.
UNIQUE_ATTEMPTS = 3
_UNIQUE = "23505"
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


#: What PostgreSQL says when it refuses a login (SQLSTATE class 28 and a missing role).
#: libpq gives no SQLSTATE for a failed connection, so its message is all there is.
_REFUSED = re.compile(
    r"authentication failed|no pg_hba\.conf entry|role \"[^\"]*\" does not exist"
    r"|password is required|no password supplied",
    re.I,
)


def _refused_login(exc: BaseException) -> bool:
    """Whether ``exc`` says the server refused the login (waiting cannot help)."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    if exc.sqlstate is not None:
        return exc.sqlstate.startswith("28")
    pgconn = exc.pgconn
    if pgconn is not None and pgconn.needs_password:
        return True
    return _REFUSED.search(str(exc)) is not None


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


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Every new connection of the pool: see :data:`IDLE_IN_TRANSACTION_MS`."""
    conn.execute(f"SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}")


class _Job(Generic[T]):
    """A queued unit of work and where its answer goes."""

    __slots__ = ("done", "duplicates", "error", "fn", "requeue", "result", "slot")

    def __init__(self, fn: Callable[[PostgresUnitOfWork], T], slot: StepSlot | None) -> None:
        self.fn = fn
        self.slot = slot
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.result: T | None = None
        self.error: BaseException | None = None
        #: Runs that met a unique violation (a race lost: run again, see UNIQUE_ATTEMPTS).
        self.duplicates = 0
        self.requeue = False


class _Again(Exception):
    """A unit of a batch run without savepoints failed: run the batch with them."""


def _batch_wide(exc: BaseException) -> bool:
    """Whether ``exc`` undoes the whole batch's transaction (to run again), not one unit's."""
    return _unavailable(exc) or _conflict(exc)


class _Tries:
    """Whether one unit's failure is worth another run, counting its failures by kind."""

    __slots__ = ("conflicts", "duplicates", "store")

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.conflicts = 0
        self.duplicates = 0

    def again(self, exc: Exception) -> bool:
        store = self.store
        if store._closed:
            return False
        if _unavailable(exc):
            store._went_down(exc)
            return True
        if _conflict(exc):
            self.conflicts += 1
            store.conflicts += 1
            return self.conflicts < CONFLICT_ATTEMPTS
        if isinstance(exc, psycopg.Error) and exc.sqlstate == _UNIQUE:
            self.duplicates += 1
            return self.duplicates < UNIQUE_ATTEMPTS
        return False


class PostgresStore:
    """The database, opened with :meth:`open` for the life of a task group."""

    def __init__(
        self,
        pool: psycopg_pool.ConnectionPool,
        dsn: str,
        password: str | None,
        kwargs: dict[str, Any],
    ) -> None:
        self._pool = pool
        self._dsn = dsn
        self._password = password
        self._kwargs = kwargs
        self._limiter = anyio.CapacityLimiter(pool.max_size)
        self._closed = False
        self._jobs: deque[_Job[Any]] = deque()
        self._wake = anyio.Event()
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
            configure=_configure,
            # Keep trying to connect for as long as the database is away: the units wait.
            reconnect_timeout=24 * 3600.0,
            name="readdod",
        )
        store = cls(pool, dsn, password, kwargs)
        try:
            await store._reach(connect_timeout_s)
            await anyio.to_thread.run_sync(pool.open)
            await store._call(store._migrate)
            async with anyio.create_task_group() as tg:
                # One connection stays for reads and alone units.
                for _ in range(max(1, pool_size - 1)):
                    tg.start_soon(store._write_loop)
                try:
                    yield store
                finally:
                    store._closed = True  # the writers commit what is queued, then end
                    store._poke()
                    # ... unless the server is away: then they are given up on, in time.
                    tg.cancel_scope.deadline = anyio.current_time() + CLOSE_WAIT_S
        finally:
            store._closed = True
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: pool.close(timeout=POOL_CLOSE_WAIT_S))

    async def _reach(self, connect_timeout_s: float) -> None:
        """Connect once before the pool does, so that a refused login ends the start at
        once (StoreAuthFailed) while a server that is down (or a database not made yet)
        is waited for: ``store.waiting`` per try, the waits doubling up to
        :data:`START_WAIT_MAX_S`; cancellable (SIGTERM) at every moment."""
        timeout = max(1, round(connect_timeout_s))

        def probe() -> None:
            psycopg.connect(self._dsn, **self._kwargs, connect_timeout=timeout).close()

        wait = START_WAIT_S
        attempt = 0
        while True:
            attempt += 1
            try:
                await anyio.to_thread.run_sync(probe, abandon_on_cancel=True)
            except psycopg.Error as exc:
                said = str(exc).strip() or type(exc).__name__
                if _refused_login(exc):
                    raise StoreAuthFailed(
                        f"PostgreSQL refused readdod's login ({said}); check the user and"
                        " password of store.dsn (or the variable store.password_env names)"
                        " and the server's pg_hba.conf. readdod does not retry a refused login"
                    ) from None
                if not _unavailable(exc):
                    raise
                self._went_down(exc)
                log.warning(
                    "store.waiting",
                    backend="postgresql",
                    attempt=attempt,
                    retry_in_s=wait,
                    error=said,
                )
                await anyio.sleep(wait)
                wait = min(wait * 2, START_WAIT_MAX_S)
            else:
                if self._down_since is not None:
                    self._came_back()
                return

    @contextmanager
    def _lend(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for one unit (in a worker thread).

        When none comes, the pool says only that it waited: a connection of
        our own then asks the server why, so that ``store.unavailable`` tells
        the operator (a server down, a password refused, a database missing).
        """
        try:
            conn = self._pool.getconn()
        except psycopg_pool.PoolTimeout as exc:
            try:
                psycopg.connect(self._dsn, **self._kwargs, connect_timeout=5).close()
            except psycopg.OperationalError as reason:
                raise reason from exc
            raise
        try:
            yield conn
        finally:
            self._pool.putconn(conn)

    def _migrate(self) -> int:
        with self._lend() as conn:
            return migrate(conn)

    # --- running units -------------------------------------------------------------

    async def _call(self, job: Callable[[], T]) -> T:
        """``job()`` in a worker thread, run again after a conflict or an outage.

        The first try goes without the retry machinery, which costs about as much
        as a statement and is needed only after a failure.
        """
        tries = _Tries(self)
        try:
            return await self._once(job)
        except Exception as exc:
            if not tries.again(exc):
                raise
        async for attempt in stamina.retry_context(
            on=tries.again,
            attempts=None,
            timeout=None,
            wait_initial=0.005,
            wait_max=UNAVAILABLE_WAIT_MAX_S,
            wait_jitter=0.05,
        ):
            with attempt:
                return await self._once(job)
        raise AssertionError("unreachable: stamina retries without limit or raises")

    async def _once(self, job: Callable[[], T]) -> T:
        if self._closed:
            raise StoreClosed("readdod is shutting down; try again when it is back")
        # Abandoned on cancel: a unit waiting for a server that is away must not hold a
        # stopping daemon (the unit is guarded, so its late commit, if any, is harmless).
        result = await anyio.to_thread.run_sync(job, limiter=self._limiter, abandon_on_cancel=True)
        if self._down_since is not None:
            self._came_back()
        return result

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
        with self._lend() as conn:
            conn.execute(begin)
            tx = PostgresUnitOfWork(conn, writing=begin is _WRITE)
            try:
                result = fn(tx)
                tx.flush()
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT" if begin is _WRITE else "ROLLBACK")
            return result, tx.statements + 2

    async def write(
        self,
        fn: Callable[[PostgresUnitOfWork], T],
        *,
        alone: bool = False,
        slot: StepSlot | None = None,
    ) -> T:
        """Run a unit of work in a transaction; returns after its commit.

        Queued for the writers' next batch; ``alone``: a long unit (a retention
        prune) in a transaction of its own, holding up no batch. ``slot``: the
        step slot the unit reads first; the batch reads all its units' in one
        statement (:meth:`_run_batch`).

        A caller cancelled while its unit waits may still see it commit, as on
        SQLite: every unit is guarded, so a late commit is harmless.
        """
        if self._closed:
            raise StoreClosed("readdod is shutting down; try again when it is back")
        if alone:
            try:
                result, statements = await self._call(lambda: self._unit(fn, _WRITE))
            except psycopg.Error as exc:
                raise _store_error(exc) from exc
            self.commits += 1
            self.units += 1
            self.statements += statements
            return result
        job = _Job(fn, slot)
        self._jobs.append(job)
        self._poke()
        await job.done
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    # --- group commit ----------------------------------------------------------------

    def _poke(self) -> None:
        """Wake every writer waiting for work (the first to look takes it)."""
        self._wake.set()
        self._wake = anyio.Event()

    async def _write_loop(self) -> None:
        while True:
            if not self._jobs:
                if self._closed:
                    return
                await self._wake.wait()
                continue
            batch = [self._jobs.popleft() for _ in range(min(len(self._jobs), MAX_BATCH))]
            await self._commit_batch(batch)

    async def _commit_batch(self, batch: list[_Job[Any]]) -> None:
        """Every job of ``batch`` in one transaction; each job's caller told the outcome."""
        statements = 0
        try:
            try:
                statements = await self._call(lambda: self._run_batch(batch, savepoints=False))
            except _Again:
                statements = await self._call(lambda: self._run_batch(batch, savepoints=True))
        except BaseException as exc:
            for job in batch:
                job.requeue = False
                # One error object each: raised in many tasks, a shared one chains tracebacks.
                job.error = (
                    _store_error(exc)
                    if isinstance(exc, Exception)
                    else StoreClosed("readdod is shutting down; try again when it is back")
                )
            if not isinstance(exc, Exception):
                self._answer(batch)
                raise
        else:
            self.commits += 1
            self.statements += statements
        self._answer(batch)

    def _answer(self, batch: list[_Job[Any]]) -> None:
        again = [job for job in batch if job.requeue]
        self._jobs.extendleft(reversed(again))
        if again:
            self._poke()
        for job in batch:
            if job.requeue:
                continue
            if job.error is None:
                self.units += 1
            if not job.done.done():  # its caller may have been cancelled
                job.done.set_result(None)

    def _run_batch(self, batch: list[_Job[Any]], *, savepoints: bool) -> int:
        """In a worker thread: the batch's units in one transaction; the statements run.

        Without savepoints, a failing unit undoes the transaction and raises
        :class:`_Again`. With them, only its own writes are undone and its
        caller gets the error; a race lost on a unique key puts the unit back
        in the queue to run again (see :data:`UNIQUE_ATTEMPTS`).
        """
        for job in batch:
            job.result = job.error = None
            job.requeue = False
        # The units that told their step slot run first, on slots read (and their rows
        # locked) in one statement; any other unit may change what those reads saw, so
        # the slots not yet asked for are forgotten before the first of them runs.
        told = [job for job in batch if job.slot is not None]
        ordered = told + [job for job in batch if job.slot is None]
        with self._lend() as conn:
            conn.execute(_WRITE)
            tx = PostgresUnitOfWork(conn, writing=True)
            if len(told) > 1:
                tx.read_slots([job.slot for job in told if job.slot is not None])
            for index, job in enumerate(ordered):
                if index == len(told):
                    tx.forget_slots()
                if savepoints:
                    conn.execute("SAVEPOINT unit")
                try:
                    job.result = job.fn(tx)
                    if savepoints:
                        tx.flush()  # its held rows fail with it, not with a later unit
                except Exception as exc:
                    if not savepoints or _batch_wide(exc):
                        _rollback(conn)
                        if _batch_wide(exc):
                            raise
                        raise _Again from exc
                    tx.held.discard()
                    conn.execute("ROLLBACK TO SAVEPOINT unit")
                    self._failed(job, exc)
                except BaseException:
                    _rollback(conn)
                    raise
                if savepoints:
                    conn.execute("RELEASE SAVEPOINT unit")
            try:
                tx.flush()
            except Exception as exc:
                # A held row refused: the batch runs again, each unit sending its own.
                _rollback(conn)
                if _batch_wide(exc):
                    raise
                raise _Again from exc
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
            return tx.statements + 2 + (2 * len(batch) if savepoints else 0)

    @staticmethod
    def _failed(job: _Job[Any], exc: Exception) -> None:
        if isinstance(exc, psycopg.Error) and exc.sqlstate == _UNIQUE:
            job.duplicates += 1
            if job.duplicates < UNIQUE_ATTEMPTS:
                job.requeue = True
                return
        job.error = _store_error(exc)

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
            with self._lend() as conn:
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
        """The connection string with every secret redacted, as logs and messages show it."""
        return redact(self._dsn)
