"""The orchestrator in a process of its own: the daemon's second core.

With an instant engine, most of the daemon's time goes into the
orchestrator's units of work and SQLite, on the event loop that also runs
the actors, the control socket and the logs: one core busy, the other idle.
A thread cannot help (a writer thread would have to win the GIL back from
the busy loop after every statement), a process can. With
``daemon.store_process`` (on by default) the daemon forks, before its event
loop starts, a child that owns the database: the store, its group-commit
writer and an :class:`~readdod.orchestrator.Orchestrator`. The daemon keeps
everything else and speaks to it through :class:`RemoteOrchestrator`, whose
every state method is a call over a socketpair: ``(id, method, args,
kwargs)`` one way, ``(id, ok, result or error, notes)`` the other, pickled,
many calls to one write. The notes (log lines, ``watch`` events, wake-ups)
are delivered in the daemon, as after a local commit, so the logs and the
event bus stay in one process.

Lifetimes: the child waits for the daemon's ``open`` (the daemon holds the
instance lock by then), ignores the stop signals so that a graceful stop can
still release leases through it, and exits when the daemon closes its end.
The kernel kills it if the daemon dies (``PR_SET_PDEATHSIG``). Should the
child die first, the daemon exits at once with the child's status: nothing
can be written without it, and a restart recovers as after any crash.
"""

from __future__ import annotations

import contextvars
import ctypes
import inspect
import itertools
import os
import pickle
import signal
import socket
import struct
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import anyio
from anyio.abc import SocketStream, UNIXSocketStream

from readdod import logging as rlog
from readdod.clock import Clock, SystemClock
from readdod.config import Config
from readdod.errors import InternalError, ReaddodError, ShuttingDown, ValidationFailed
from readdod.events import EventBus
from readdod.logging import get_logger
from readdod.orchestrator import Notes, Orchestrator, _Note
from readdod.store import Store

log = get_logger("readdod.store_process")

_HEADER = struct.Struct("!I")
_PR_SET_PDEATHSIG = 1
#: The daemon's exit status when the child died of something other than an exit.
EXIT_CHILD_LOST = 70


class StoreProcess(NamedTuple):
    """The forked child, as the daemon sees it."""

    pid: int
    sock: socket.socket


# --- framing ------------------------------------------------------------------


def _frame(obj: Any) -> bytes:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


def _portable(exc: BaseException) -> BaseException:
    """An error the other process can unpickle; anything odd becomes an InternalError."""
    if isinstance(exc, ReaddodError):
        return exc
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return InternalError(f"the store process failed: {type(exc).__name__}: {exc}")
    return exc


class _Link:
    """Frames over one stream: sends are queued and written together, reads yield objects."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._out: list[bytes] = []
        self._wake = anyio.Event()
        self._closing = False

    def send(self, obj: Any) -> None:
        self._out.append(_frame(obj))
        self._wake.set()

    def close_soon(self) -> None:
        """Write what is queued, then end the stream (the other side reads EOF)."""
        self._closing = True
        self._wake.set()

    async def sender(self) -> None:
        while True:
            if not self._out:
                if self._closing:
                    break
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            data = b"".join(self._out)
            self._out.clear()
            try:
                await self._stream.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
        try:
            await self._stream.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    async def frames(self) -> AsyncIterator[Any]:
        buf = bytearray()
        while True:
            try:
                data = await self._stream.receive(1 << 20)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            buf += data
            pos = 0
            while len(buf) - pos >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buf, pos)
                end = pos + _HEADER.size + size
                if len(buf) < end:
                    break
                yield pickle.loads(buf[pos + _HEADER.size : end])
                pos = end
            del buf[:pos]


# --- the child ------------------------------------------------------------------

#: The notes of the call a task in the child answers.
_OUTBOX: contextvars.ContextVar[list[_Note]] = contextvars.ContextVar("readdod_outbox")


def _to_outbox(notes: list[_Note]) -> None:
    _OUTBOX.get().extend(notes)


def fork(cfg: Config) -> StoreProcess:
    """Start the child; call before the event loop exists (a fork copies only this thread)."""
    rlog.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    parent = os.getpid()
    pid = os.fork()
    if pid != 0:
        theirs.close()
        return StoreProcess(pid, ours)
    code = EXIT_CHILD_LOST
    try:
        ours.close()
        _die_with(parent)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        anyio.run(_child, cfg, theirs, backend="asyncio")
        code = 0
    except BaseException as exc:  # the child must never return into the daemon's code
        log.error("store_process.failed", error=repr(exc))
    finally:
        rlog.flush()
        os._exit(code)


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when the daemon dies, however it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - not Linux: EOF still ends it
        pass
    if os.getppid() != parent:
        os._exit(0)  # the daemon died before the request was in place


async def _child(cfg: Config, sock: socket.socket) -> None:
    link = _Link(await UNIXSocketStream.from_socket(sock))
    frames = link.frames()
    async with anyio.create_task_group() as tg:
        tg.start_soon(link.sender)
        try:
            first = await anext(frames, None)
            if first is None:
                return  # the daemon stopped before opening
            _, db = first
            await _serve(cfg, Path(db), link, frames)
        finally:
            link.close_soon()


async def _serve(cfg: Config, db: Path, link: _Link, frames: AsyncIterator[Any]) -> None:
    opened = False
    try:
        async with Store.open(
            db, synchronous=cfg.daemon.synchronous, units_in_thread=True
        ) as store:
            orch = Orchestrator.from_config(cfg, store, SystemClock())
            orch.deliver = _to_outbox
            link.send(("ready", None))
            opened = True
            async with anyio.create_task_group() as calls:
                async for call_id, method, args, kwargs in frames:
                    queued = _QUEUED.get(method)
                    if queued is None:
                        calls.start_soon(_answer, link, orch, call_id, method, args, kwargs)
                        continue
                    try:
                        unit = getattr(orch, queued)(*args, **kwargs)
                    except Exception as exc:
                        link.send((call_id, False, _portable(exc), []))
                        continue
                    orch.commit_soon(unit, partial(_reply, link, call_id))
    except Exception as exc:
        if opened:
            raise
        link.send(("ready", _portable(exc)))


#: Calls answered without a task: the method's unit goes straight to the store's queue.
_QUEUED = {"put_artifact": "put_artifact_unit"}


def _reply(
    link: _Link, call_id: int, result: Any, error: BaseException | None, notes: list[_Note]
) -> None:
    if error is not None:
        link.send((call_id, False, _portable(error), notes))
    else:
        link.send((call_id, True, result, notes))


async def _answer(
    link: _Link,
    orch: Orchestrator,
    call_id: int,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    notes: list[_Note] = []
    _OUTBOX.set(notes)
    try:
        result = await getattr(orch, method)(*args, **kwargs)
    except Exception as exc:
        link.send((call_id, False, _portable(exc), notes))
        return
    try:
        link.send((call_id, True, result, notes))
    except Exception as exc:  # pragma: no cover - a result that cannot be pickled is a bug
        link.send((call_id, False, _portable(exc), notes))


# --- the daemon's side ------------------------------------------------------------


class _Waiter:
    __slots__ = ("done", "ok", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.ok = False
        self.value: Any = None


class RemoteOrchestrator(Orchestrator):
    """The orchestrator in the store process, seen from the daemon.

    Its state methods are calls to the child (set up below the class); the
    listeners, the event bus, the clock and the supervisor's capture slots
    stay here.
    """

    def __init__(self, link: _Link, clock: Clock, *, auto_process: bool) -> None:
        # No store in this process: everything that needs one runs in the child.
        self.clock = clock
        self.auto_process = auto_process
        self.notes = Notes(EventBus(clock))
        self.bus = self.notes.bus
        self.dispatcher = None
        self.deliver = self.notes.deliver
        self._link = link
        self._calls: dict[int, _Waiter] = {}
        self._ids = itertools.count()
        self._closing = False

    @classmethod
    @asynccontextmanager
    async def open(
        cls, child: StoreProcess, db: Path, clock: Clock, *, auto_process: bool
    ) -> AsyncIterator[RemoteOrchestrator]:
        """Have the child open ``db``; on leaving, let it finish its calls and wait for it."""
        link = _Link(await UNIXSocketStream.from_socket(child.sock))
        remote = cls(link, clock, auto_process=auto_process)
        frames = link.frames()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(link.sender)
                link.send(("open", str(db)))
                try:
                    first = await anext(frames, None)
                    if first is None:
                        raise InternalError("the store process ended before opening the database")
                    _, error = first
                    if error is not None:
                        raise error
                    tg.start_soon(remote._receive, frames, child.pid)
                    yield remote
                finally:
                    remote._closing = True
                    link.close_soon()
        finally:
            await anyio.to_thread.run_sync(os.waitpid, child.pid, 0)

    async def _receive(self, frames: AsyncIterator[Any], pid: int) -> None:
        async for call_id, ok, value, notes in frames:
            if notes:
                self.deliver(notes)
            waiter = self._calls.pop(call_id, None)
            if waiter is not None:
                waiter.ok = ok
                waiter.value = value
                waiter.done.set()
        if not self._closing:
            _, status = await anyio.to_thread.run_sync(os.waitpid, pid, 0)
            code = os.waitstatus_to_exitcode(status)
            log.error(
                "store_process.died",
                pid=pid,
                exit_code=code,
                hint="the daemon stops with it; a restart recovers what was in flight",
            )
            rlog.flush()
            os._exit(code if code > 0 else EXIT_CHILD_LOST)

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self._closing:
            raise ShuttingDown("readdod is shutting down; try again when it is back")
        call_id = next(self._ids)
        try:
            self._link.send((call_id, method, args, kwargs))
        except RecursionError:
            raise ValidationFailed(
                "the request is nested too deeply to be handled; send a flatter value"
            ) from None
        waiter = _Waiter()
        self._calls[call_id] = waiter
        try:
            await waiter.done.wait()
        finally:
            self._calls.pop(call_id, None)
        if waiter.ok:
            return waiter.value
        raise waiter.value


def _forward(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    async def call(self: RemoteOrchestrator, *args: Any, **kwargs: Any) -> Any:
        return await self._call(name, *args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


#: Run here, in the daemon: a capture reserves the supervisor's slot, then calls capture_for.
_LOCAL = frozenset({"capture"})

for _name, _member in vars(Orchestrator).items():
    if inspect.iscoroutinefunction(_member) and not _name.startswith("_") and _name not in _LOCAL:
        setattr(RemoteOrchestrator, _name, _forward(_name))
