"""SQLite with group commit: one writer connection, one reader in a thread of its own.

Two connections: a writer and a reader (WAL lets them overlap). Writes are
*units of work*, synchronous functions of a
:class:`~readdod.store.sqlite.executor.SqliteUnitOfWork`, queued for one writer
task: whatever is waiting when it wakes runs as one transaction, ``BEGIN
IMMEDIATE``, the units, one ``COMMIT`` (one fsync) for the lot. A caller's
``await store.write(...)`` returns only after its commit, so an
acknowledged request is durable.

The units run on the event loop itself. What they only append (step
artifacts, events, a run's current step) is held back (see
:mod:`readdod.store.sqlite.executor`) and written, with ``COMMIT``, by a
commit thread of the store's own: one multi-row ``INSERT`` per table, the
values bound, so the full-text indexing of extracted text, the heaviest
part, runs there without the GIL, beside the loop. A thread writing row by
row (executemany) would have to win the GIL back from the busy loop after
every row; this one needs it a few times a batch. A thread of its own, not
``anyio.to_thread``: that first yields to the loop, and the commit would
wait behind every ready task.
While a batch commits, the loop goes on with whatever else is ready (with
thousands of items in flight, the actors whose steps are not in it).

The log is copied into the database file beside the writer, not inside
its commits: a checkpoint inside a COMMIT, copying the log and syncing both
files, made every few batches (and the 100,000-orphan recovery) wait for
it. A third connection copies the log with PASSIVE checkpoints, which
neither wait for nor block the writer, in a thread of its own after every
few commits. Only the writer can start the log over, and only after a
checkpoint that copied all of it, which one running beside a busy writer
rarely manages; so the writer still checkpoints itself, but only once the
log passes :data:`WAL_PAGES_MAX` pages, and by then the other connection
has copied nearly all of it. ``journal_size_limit`` then cuts the file back.

Reads go to the reader's own thread (:mod:`readdod.store.sqlite.reader`), a
whole read function per hop, on one snapshot.

A cancelled caller's unit may still commit: the writer cannot take back a
unit already queued. Every unit is therefore guarded (compare-and-set on
status and lease) so a late commit is harmless.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio

from readdod.errors import InternalError, ShuttingDown, StoreBusy, StoreWriteFailed
from readdod.runtime.logging import get_logger
from readdod.store import channel as channels
from readdod.store.api import NOTICE_MAX_BYTES, StepSlot
from readdod.store.rows import BackupResult, StoreCounters
from readdod.store.sqlite.backup import backup_database
from readdod.store.sqlite.executor import SqliteUnitOfWork
from readdod.store.sqlite.reader import Reader
from readdod.store.sqlite.schema import check_sqlite, ensure_incremental_vacuum, migrate

T = TypeVar("T")
log = get_logger("readdod.store")

MAX_BATCH = 512


class StoreClosed(ShuttingDown):
    """The store no longer takes work (the daemon is stopping)."""


class _Job(Generic[T]):
    """A unit of work (``fn(tx)`` inside the batch's transaction), or with ``raw`` a
    function of the bare connection run alone between two batches."""

    __slots__ = ("alone", "done", "error", "fn", "raw", "result")

    def __init__(self, fn: Callable[[Any], T], *, raw: bool = False, alone: bool = False) -> None:
        self.fn = fn
        self.raw = raw
        self.alone = alone
        # A bare asyncio future (readdod runs on anyio's asyncio backend): a tenth
        # of an anyio.Event's cost, paid for every step of every item.
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.result: T | None = None
        self.error: BaseException | None = None


def _wake(job: _Job[Any]) -> None:
    if not job.done.done():  # its caller may have been cancelled
        job.done.set_result(None)


#: Errors of the files themselves: a full disk or a ``ulimit -f`` gives SQLITE_FULL or IOERR_WRITE.
_CANNOT_WRITE = frozenset(
    {
        "SQLITE_FULL",
        "SQLITE_IOERR_WRITE",
        "SQLITE_IOERR_FSYNC",
        "SQLITE_IOERR_DIR_FSYNC",
        "SQLITE_IOERR_TRUNCATE",
        "SQLITE_IOERR_SHMSIZE",
    }
)


def _is_busy(exc: BaseException) -> bool:
    """Whether another connection holds a lock ``exc`` needed."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc)
    return getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or (
        "locked" in text or "busy" in text
    )


def store_error(exc: BaseException) -> BaseException:
    """What a caller is told of ``exc``: a SQLite error as a store error, anything else as is."""
    if not isinstance(exc, sqlite3.Error):
        return exc
    text = str(exc)
    if _is_busy(exc):
        return StoreBusy("the database is locked by another process; try again in a moment")
    if getattr(exc, "sqlite_errorname", None) in _CANNOT_WRITE:
        return StoreWriteFailed(
            f"the database could not write its files ({text}): the disk may be full, or the"
            " file size limit readdod runs under (ulimit -f) is too small. Free space or raise"
            " the limit, then send the request again"
        )
    return InternalError(f"database error: {text}")


#: How long BEGIN waits for a lock another process holds (in a worker thread).
BUSY_TIMEOUT_MS = 5000


def _begin(conn: sqlite3.Connection, *, wait: bool) -> BaseException | None:
    """BEGIN IMMEDIATE; without ``wait``, a lock held elsewhere fails it at once.

    The writer connection's busy timeout is 0, so the usual BEGIN runs on the
    loop in microseconds; only when another process holds the lock does the
    writer retry with ``wait`` in a worker thread, where waiting blocks nothing.
    """
    try:
        if wait:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        finally:
            if wait:
                conn.execute("PRAGMA busy_timeout = 0")
    except sqlite3.Error as exc:
        return exc
    return None


class _Retry(Exception):
    """A unit failed in a batch run without savepoints: run it again with them."""


def _commit(
    conn: sqlite3.Connection, held: Sequence[tuple[str, Sequence[Any]]] = ()
) -> BaseException | None:
    """In the commit thread: the rows held back, then COMMIT, the fsync that makes a batch
    durable; the error, if any (:class:`_Retry` when a held row failed).

    Any error rolls the transaction back.
    """
    try:
        try:
            for sql, params in held:
                conn.execute(sql, params)
        except Exception:  # a constraint, or text SQLite cannot take (a lone surrogate)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return _Retry()
        conn.execute("COMMIT")
    except Exception as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        return exc
    return None


#: Commits between two checkpoints: about SQLite's own 1,000 pages of log at the batch sizes
#: the daemon writes under load.
CHECKPOINT_EVERY = 4
#: The writer's own checkpoint threshold (its ``wal_autocheckpoint``): the log is started
#: over past this many pages (128 MB at 4 KB), more than a 100,000-orphan recovery writes (76).
WAL_PAGES_MAX = 32_768


def _checkpoint(conn: sqlite3.Connection) -> None:
    """In a worker thread: copy what the log holds into the database file, waiting for no one.

    PASSIVE returns busy rather than failing when a reader or the writer is in
    the way; what it could not copy, the next one does.
    """
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _open_checkpointer(path: Path, synchronous: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    except BaseException:
        conn.close()
        raise
    return conn


def _run_units(
    conn: sqlite3.Connection, batch: list[_Job[Any]], *, savepoints: bool
) -> SqliteUnitOfWork | None:
    """The batch's units inside the open transaction; the unit still holding the rows
    they held back (with savepoints, each unit's are written after it).

    Without savepoints, a failing unit rolls the transaction back and raises
    :class:`_Retry`. With them, only that unit's writes are undone; None when
    SQLite rolled back the whole batch (disk full, I/O error), every job then
    holding the error.
    """
    tx = SqliteUnitOfWork(conn)
    for job in batch:
        if savepoints:
            conn.execute("SAVEPOINT unit")
        try:
            job.result = job.fn(tx)
            if savepoints:
                tx.flush()
        except Exception as exc:
            tx.discard()
            if not savepoints:
                # A unit, or a row held back by any unit, failed: find which with savepoints.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                for other in batch:
                    other.result = None
                raise _Retry from exc
            job.error = store_error(exc)
            if not conn.in_transaction:
                # SQLite rolled the whole batch back (disk full, I/O error): nothing committed.
                for other in batch:
                    other.error = store_error(exc)
                return None
            conn.execute("ROLLBACK TO unit")
        if savepoints:
            conn.execute("RELEASE unit")
    tx.statements += 2 + (2 * len(batch) if savepoints else 0)
    return tx


def _run_alone(conn: sqlite3.Connection, job: _Job[Any]) -> tuple[int, bool]:
    """In a worker thread: one long unit in a transaction of its own; (statements, committed)."""
    error = _begin(conn, wait=True)
    if error is not None:
        job.error = store_error(error)
        return 1, False
    tx = _run_units(conn, [job], savepoints=True)
    if tx is None or job.error is not None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        return 0, False
    error = _commit(conn)
    if error is not None:
        job.result = None
        job.error = store_error(error)
        return tx.statements, False
    return tx.statements, True


def _read(conn: sqlite3.Connection, fn: Callable[[SqliteUnitOfWork], T]) -> tuple[T, int]:
    """In the reader's thread: one consistent snapshot for the whole read."""
    conn.execute("BEGIN")
    tx = SqliteUnitOfWork(conn)
    try:
        return fn(tx), tx.statements + 2
    finally:
        conn.execute("COMMIT")


def _reclaim(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    try:
        _reclaim_now(conn)
    finally:
        conn.execute("PRAGMA busy_timeout = 0")


def _reclaim_now(conn: sqlite3.Connection) -> None:
    # executescript steps the pragma to completion (a plain execute frees one page).
    conn.executescript("PRAGMA incremental_vacuum;")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def _pragmas(synchronous: str, *, readonly: bool) -> list[str]:
    found = [f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}", "PRAGMA foreign_keys = ON"]
    if readonly:
        found.append("PRAGMA query_only = ON")
    else:
        # Before WAL: on a new file this is what makes freed pages returnable (§9 retention).
        found += [
            "PRAGMA auto_vacuum = INCREMENTAL",
            "PRAGMA journal_mode = WAL",
            f"PRAGMA synchronous = {synchronous}",
        ]
    return found


def _open_writer(path: Path, synchronous: str) -> sqlite3.Connection:
    """The writing connection; used by one thread at a time (the loop, or a commit's worker)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        for pragma in _pragmas(synchronous, readonly=False):
            conn.execute(pragma)
        migrate(conn)
        ensure_incremental_vacuum(conn)
        conn.execute("PRAGMA busy_timeout = 0")  # see _begin
        # See the module's docstring.
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES_MAX}")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute(f"PRAGMA journal_size_limit = {WAL_PAGES_MAX * page}")
    except BaseException:
        conn.close()
        raise
    return conn


class SqliteStore:
    """The database, opened with :meth:`open` for the life of a task group."""

    def __init__(
        self,
        path: Path,
        reader: Reader,
        writer: sqlite3.Connection,
    ) -> None:
        self.path = path
        self._reader = reader
        self._writer = writer
        self._jobs: deque[_Job[Any]] = deque()
        self._committer = concurrent.futures.ThreadPoolExecutor(1, "readdod-commit")
        self._wake = anyio.Event()
        self._closed = False
        self._writing = True
        #: Commits since the last checkpoint began; set to start one.
        self._uncheckpointed = 0
        self._checkpoint_wake = anyio.Event()
        self._checkpoint_done = anyio.Event()
        #: Checkpoints run since open.
        self.checkpoints = 0
        #: Cumulative counters since open, for ``stats`` and the benchmarks.
        self.commits = 0
        self.units = 0
        self.statements = 0
        self.reads = 0
        self.read_statements = 0
        #: Notices to the other users of this database (all in this process: one daemon).
        self._channel = channels.LocalChannel()

    @classmethod
    @asynccontextmanager
    async def open(cls, path: Path, *, synchronous: str = "FULL") -> AsyncIterator[SqliteStore]:
        check_sqlite()
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = await anyio.to_thread.run_sync(_open_writer, path, synchronous)
        try:
            checkpointer = await anyio.to_thread.run_sync(_open_checkpointer, path, synchronous)
        except BaseException:
            writer.close()
            raise
        try:
            reader = await Reader.open(path, _pragmas(synchronous, readonly=True))
        except BaseException:
            checkpointer.close()
            writer.close()
            raise
        store = cls(path, reader, writer)
        try:
            with channels.for_database(path) as store._channel:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(store._write_loop)
                    tg.start_soon(store._checkpoint_loop, checkpointer)
                    try:
                        yield store
                    finally:
                        store._closed = True
                        store._wake.set()
        finally:
            await reader.close()
            store._committer.shutdown()
            checkpointer.close()
            writer.close()

    async def _write_loop(self) -> None:
        """Take whatever work is waiting, commit it as one batch, repeat.

        The units run here, on the event loop; a waiting BEGIN goes to a worker
        thread, the held-back rows and the COMMIT to the commit thread (see the
        module's docstring).
        """
        try:
            await self._write_batches()
        finally:
            self._writing = False
            self._checkpoint_wake.set()

    async def _write_batches(self) -> None:
        conn = self._writer
        limiter = anyio.CapacityLimiter(1)
        while True:
            if not self._jobs:
                if self._closed:
                    return
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            job = self._jobs.popleft()
            with anyio.CancelScope(shield=True):
                if job.raw:
                    try:
                        job.result = await anyio.to_thread.run_sync(job.fn, conn, limiter=limiter)
                    except Exception as exc:
                        job.error = store_error(exc)
                    _wake(job)
                    continue
                if job.alone:
                    statements, committed = await anyio.to_thread.run_sync(
                        _run_alone, conn, job, limiter=limiter
                    )
                    self._count(statements, committed, 1)
                    _wake(job)
                    continue
                batch = [job]
                while (
                    self._jobs
                    and len(batch) < MAX_BATCH
                    and not (self._jobs[0].raw or self._jobs[0].alone)
                ):
                    batch.append(self._jobs.popleft())
                try:
                    statements, committed = await self._commit_batch(conn, batch, limiter)
                except Exception as exc:  # pragma: no cover - a bug; answer every waiter anyway
                    statements, committed = 0, False
                    for j in batch:
                        j.error = InternalError(f"the database writer failed: {exc!r}")
                self._count(statements, committed, len(batch))
                for j in batch:
                    _wake(j)

    def _count(self, statements: int, committed: bool, units: int) -> None:
        self.statements += statements
        if committed:
            self.commits += 1
            self.units += units
            self._uncheckpointed += 1
            if self._uncheckpointed >= CHECKPOINT_EVERY:
                self._checkpoint_wake.set()

    async def _checkpoint_loop(self, conn: sqlite3.Connection) -> None:
        """Checkpoint when told to, one at a time, until the writer stops."""
        limiter = anyio.CapacityLimiter(1)
        while self._writing:
            await self._checkpoint_wake.wait()
            self._checkpoint_wake = anyio.Event()
            if not self._writing:
                return
            self._uncheckpointed = 0
            with anyio.CancelScope(shield=True):
                try:
                    await anyio.to_thread.run_sync(_checkpoint, conn, limiter=limiter)
                except sqlite3.Error as exc:
                    # The next one copies what this one could not; only the log grows
                    # meanwhile. Running into the writer's own checkpoint is no news.
                    if not _is_busy(exc):
                        log.warning(
                            "store.checkpoint_failed",
                            error=str(exc),
                            hint="the next checkpoint tries again; until one succeeds the"
                            " database's log file keeps growing",
                        )
            self.checkpoints += 1
            self._checkpoint_done.set()
            self._checkpoint_done = anyio.Event()

    async def wait_checkpoints(self, count: int) -> None:
        """Return once ``count`` checkpoints have run since open (for tests and benchmarks)."""
        while self.checkpoints < count:
            await self._checkpoint_done.wait()

    async def _commit_batch(
        self, conn: sqlite3.Connection, batch: list[_Job[Any]], limiter: anyio.CapacityLimiter
    ) -> tuple[int, bool]:
        """Every job of the batch in one transaction; (statements, committed).

        The batch first runs without savepoints (two statements fewer per unit).
        Should any unit raise, that attempt is rolled back whole and the batch
        runs again with a savepoint around each unit, so only the failing units
        lose their writes. Units are functions of the database alone, so running
        one twice is safe.
        """
        for savepoints in (False, True):
            error = _begin(conn, wait=False)
            if error is not None and _is_busy(error):
                error = await anyio.to_thread.run_sync(
                    partial(_begin, conn, wait=True), limiter=limiter
                )
            if error is not None:
                for job in batch:
                    # One error object each: raised in many tasks, a shared one chains tracebacks.
                    job.error = store_error(error)
                return 1, False
            try:
                tx = _run_units(conn, batch, savepoints=savepoints)
            except _Retry:
                continue
            if tx is None:
                return 0, False
            held = [] if savepoints else tx.take_held()
            error = await asyncio.wrap_future(self._committer.submit(_commit, conn, held))
            if error is None:
                return tx.statements, True
            if isinstance(error, _Retry):
                continue
            for job in batch:
                job.result = None
                job.error = store_error(error)
            return tx.statements, False
        return 0, False  # pragma: no cover - the savepoint attempt always returns

    async def _submit(self, job: _Job[T]) -> T:
        if self._closed:
            raise StoreClosed("readdod is shutting down; try again when it is back")
        self._jobs.append(job)
        self._wake.set()
        await job.done
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    async def write(
        self,
        fn: Callable[[SqliteUnitOfWork], T],
        *,
        alone: bool = False,
        slot: StepSlot | None = None,
    ) -> T:
        """Run a unit of work in a transaction; returns after it is durable.

        ``alone``: a long unit (a retention prune) runs in a transaction of its
        own in a worker thread, so the event loop is not held for its length.
        ``slot`` changes nothing: a statement here costs no round trip.
        """
        return await self._submit(_Job(fn, alone=alone))

    async def reclaim(self) -> None:
        """Give freed pages back to the file system (after a prune), between two commits."""
        await self._submit(_Job(_reclaim, raw=True))

    async def read(self, fn: Callable[[SqliteUnitOfWork], T]) -> T:
        """Run read-only queries on one snapshot."""
        if self._reader.closed:
            raise StoreClosed("readdod is shutting down; try again when it is back")
        try:
            result: T
            result, statements = await self._reader.run(_read, fn)
        except sqlite3.Error as exc:
            raise store_error(exc) from exc
        self.reads += 1
        self.read_statements += statements
        return result

    async def backup(self, dest: str | Path) -> BackupResult:
        """An online copy of the database to ``dest``, made in a worker thread
        (:func:`readdod.store.sqlite.backup.backup_database`)."""
        return await anyio.to_thread.run_sync(backup_database, self.path, dest)

    async def notify(self, payload: str) -> None:
        if len(payload.encode()) > NOTICE_MAX_BYTES:
            raise ValueError(f"a notice is at most {NOTICE_MAX_BYTES} bytes")
        self._channel.send(payload)
        await anyio.lowlevel.checkpoint()

    def listen(self) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        return self._channel.listen()

    def counters(self) -> StoreCounters:
        return StoreCounters(
            transactions=self.commits,
            units=self.units,
            statements=self.statements,
            reads=self.reads,
            read_statements=self.read_statements,
        )
