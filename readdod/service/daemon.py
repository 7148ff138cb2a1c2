"""The composition root: configures logging, wires the parts together, runs the event loop.

:func:`main` is ``readdod serve``: logging first, then :func:`serve`, which
builds the store, the core, the pipeline, the supervisor, the control server
and every background loop, and runs them in one task group.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import signal
import socket
import stat
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import IO, NamedTuple

import anyio
from anyio.abc import SocketListener, TaskStatus

from readdod import __version__
from readdod.control.security import prepare_socket_dir, secure_socket_file
from readdod.control.server import ControlServer
from readdod.core import Core
from readdod.core.fleet import Fleet
from readdod.engines import make_engine
from readdod.errors import ConfigError, InstanceLocked, ReaddodError
from readdod.export.writer import Exporter
from readdod.extraction.fetch import FetchClient, make_client
from readdod.fleet.relay import Relay
from readdod.loops import retention
from readdod.loops.auto_export import AutoExporter
from readdod.loops.feeds import FeedPoller
from readdod.loops.heartbeat import Heartbeat
from readdod.loops.presence import Presence
from readdod.loops.retry import RetryScheduler
from readdod.metrics import http as metrics_http
from readdod.metrics.exposition import DaemonCollector, Metrics
from readdod.metrics.meter import Meter
from readdod.processing.pipeline import Pipeline
from readdod.processing.supervisor import Supervisor, worker_id
from readdod.runtime import collector, dsn
from readdod.runtime import logging as rlog
from readdod.runtime.clock import Clock, SystemClock
from readdod.runtime.logging import get_logger
from readdod.service import systemd
from readdod.settings import config
from readdod.settings import listen as metrics_address
from readdod.settings.config import Config
from readdod.store import SqliteStore
from readdod.store import api as store_api

log = get_logger("readdod.daemon")


#: How long past its shutdown grace a stopping daemon may take (its cleanup writes, the
#: store closing, the interpreter ending) before it ends itself (``daemon.stop_overdue``).
STOP_MARGIN_S = 5.0
#: The exit code of a stop that overran (the stop was asked for, but was not clean).
EXIT_STOP_OVERDUE = 1


def main(cfg: Config, *, source: Path | None = None, overrides: Sequence[str] = ()) -> None:
    """Run the daemon until it is stopped: logging as ``[log]`` says (every library's
    logging through it), then :func:`serve`; a start that fails is logged, then raised."""
    rlog.configure(cfg.log.level, fmt=cfg.log.format, file=cfg.log.file)
    rlog.capture_libraries(cfg.log.level)
    _register_secrets(cfg)
    log.info(
        "daemon.starting",
        version=__version__,
        config=str(source) if source else None,
        overrides=list(overrides),
    )
    collector.tune()
    try:
        anyio.run(serve, cfg, backend="asyncio")
    except ReaddodError as exc:
        log.error("daemon.failed", error_code=exc.error_code, error=exc.message)
        raise


class _Stopper:
    """SIGTERM and SIGINT from the daemon's first moment. Before the daemon runs (the
    database still awaited) a signal cancels the start; once it runs, the supervisor
    drains (a second signal: at once). Either way, a stop that overruns the shutdown
    grace by :data:`STOP_MARGIN_S` (a thread stuck on a server that went away) ends
    the process: SIGTERM always ends the daemon in bounded time."""

    def __init__(self, grace_s: float) -> None:
        self.grace_s = grace_s
        self.starting = anyio.CancelScope()
        #: Set by ``_run`` once the daemon runs: what a signal does then (its count).
        self.on_signal: Callable[[int], None] | None = None
        self.count = 0

    async def watch(self, signals: AsyncIterator[signal.Signals]) -> None:
        async for signum in signals:
            if signum == signal.SIGHUP:
                try:
                    log.info("log.reopened", file=rlog.reopen())
                except OSError as exc:
                    # Keep writing to the old file rather than die over a log file.
                    log.warning("log.reopen_failed", file=rlog.current_file(), error=str(exc))
                continue
            self.count += 1
            log.info("daemon.signal", signal=signum.name, count=self.count)
            if self.count == 1:
                systemd.notify("STOPPING=1")
                self._arm(self.grace_s + STOP_MARGIN_S)
            if self.on_signal is None:
                self.starting.cancel()
            else:
                self.on_signal(self.count)

    @staticmethod
    def _arm(after_s: float) -> None:
        timer = threading.Timer(after_s, _stop_overdue, args=(after_s,))
        timer.daemon = True
        timer.start()


def _stop_overdue(after_s: float) -> None:
    """In the backstop's thread: the stop took too long; say so and end the process."""
    log.error(
        "daemon.stop_overdue",
        after_s=after_s,
        hint="a cleanup outlived the shutdown grace (a database away?); items left"
        " PROCESSING are recovered at the next start",
    )
    rlog.flush()
    os._exit(EXIT_STOP_OVERDUE)


def _register_secrets(cfg: Config) -> None:
    """Tell the log scrubber every secret's value: the API key and systemd credentials."""
    key_env = getattr(cfg.ai, "api_key_env", None)
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if key_env:
        rlog.add_secret(os.environ.get(key_env))
    rlog.add_secret(os.environ.get(cfg.store.password_env))
    for value in dsn.secret_values(cfg.store.dsn or ""):
        rlog.add_secret(value)
    if creds:
        try:
            for entry in Path(creds).iterdir():
                if entry.is_file() and entry.stat().st_size <= 64 * 1024:
                    rlog.add_secret(entry.read_text(errors="replace").strip())
        except OSError:
            pass


@contextlib.asynccontextmanager
async def open_store(cfg: Config, db: Path) -> AsyncIterator[store_api.Store]:
    """The store ``[store]`` names: the SQLite file ``db``, or the shared PostgreSQL database
    (its driver imported only then: it is an optional extra)."""
    if cfg.store.backend == "postgresql":
        try:
            from readdod.store.postgresql import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                'store.backend = "postgresql" needs the PostgreSQL driver:'
                " pip install 'readdod[postgresql]'"
            ) from exc
        password = config.read_secret(cfg.store.password_env)
        async with PostgresStore.open(
            cfg.store.dsn or "", password=password, pool_size=cfg.store.pool_size
        ) as pg:
            log.info("store.opened", backend="postgresql", dsn=pg.dsn)
            yield pg
        return
    async with SqliteStore.open(db, synchronous=cfg.daemon.synchronous) as sqlite:
        yield sqlite


def daemon_instance(data: Path) -> str:
    """The daemon's lasting name: its host and an id kept in its data directory.

    Every lease owner id starts with it; a daemon restarted on the same data
    directory (whose lock it holds) knows those leases are its dead self's.
    """
    path = data / "daemon-id"
    try:
        found = path.read_text("ascii").strip()
    except FileNotFoundError:
        found = ""
    if not found:
        found = secrets.token_hex(4)
        path.write_text(found + "\n", "ascii")
    return f"{socket.gethostname()}/{found}"


def acquire_instance_lock(db: Path) -> IO[bytes]:
    """Hold ``<db>.lock`` for the life of the process: one daemon per database."""
    lock_path = db.with_name(db.name + ".lock")
    handle = lock_path.open("ab")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise InstanceLocked(
                f"another readdod daemon is already running on {db} (it holds {lock_path});"
                " stop it first, or give this one another daemon.data_dir"
            ) from exc
        raise
    return handle


def _claim_socket_path(path: Path) -> None:
    """Make ``path`` bindable, refusing to steal a live daemon's socket."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigError(
            f"{path} exists and is not a socket; readdod will not replace it."
            " Set control.socket to another path"
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink(missing_ok=True)  # stale: nobody listens
        return
    finally:
        probe.close()
    raise InstanceLocked(
        f"another readdod daemon already listens on {path}; stop it, or set control.socket"
    )


def _activated_socket(fd: int) -> socket.socket:
    """The listener systemd passed; only a Unix stream socket may carry the control protocol."""
    sock = socket.socket(fileno=fd)
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        sock.close()
        raise ConfigError(
            "the socket systemd passed is not a Unix stream socket; the control protocol"
            " has no authentication beyond SO_PEERCRED, so readdod.socket must use"
            " ListenStream=/path/to/readdod.sock"
        )
    return sock


async def serve(
    cfg: Config,
    *,
    clock: Clock | None = None,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run the daemon until a signal stops it: the instance lock and the metrics
    listeners are held for the whole life, signals watched from its first moment."""
    clock = clock or SystemClock()
    data = config.data_dir(cfg)
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    started = time.monotonic()
    async with contextlib.AsyncExitStack() as stack:
        stack.enter_context(contextlib.closing(acquire_instance_lock(data / "readdod.db")))
        scrape: list[SocketListener] = []
        stack.push_async_callback(_close_listeners, scrape)
        await _until_stopped(cfg, clock, task_status, scrape)
        log.info("daemon.stopped", uptime_s=round(time.monotonic() - started, 3))


async def _close_listeners(listeners: list[SocketListener]) -> None:
    for bound in listeners:
        with anyio.CancelScope(shield=True):
            await bound.aclose()


async def _until_stopped(
    cfg: Config, clock: Clock, task_status: TaskStatus[None], scrape: list[SocketListener]
) -> None:
    """:func:`_start` under the signal watch: a signal before the daemon runs (a
    database still awaited) ends the start; a failure is raised as itself, not in a
    group, for the CLI."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        stopper = _Stopper(cfg.daemon.shutdown_grace_s)
        failure: Exception | None = None
        async with anyio.create_task_group() as outer:
            outer.start_soon(stopper.watch, signals)
            try:
                with stopper.starting:
                    await _start(cfg, clock, stopper, task_status, scrape)
            except Exception as exc:
                failure = exc
            finally:
                outer.cancel_scope.cancel()
        if failure is not None:
            raise failure


async def _start(
    cfg: Config,
    clock: Clock,
    stopper: _Stopper,
    task_status: TaskStatus[None],
    scrape: list[SocketListener],
) -> None:
    """Open the store and build every part, then run them until the daemon stops; the
    metrics listeners bound go into ``scrape`` (the caller closes them). Each resource
    is entered on one exit stack, and left in the reverse order."""
    data = config.data_dir(cfg)
    instance = daemon_instance(data)
    owner = worker_id(instance)
    fds = systemd.listen_fds()
    activated = _activated_socket(fds[0]) if fds else None
    sock_path = config.socket_path(cfg)
    if activated is None:
        prepare_socket_dir(sock_path.parent, cfg.control.group)
        _claim_socket_path(sock_path)
    scrape.extend(await _metrics_listener(cfg) or ())
    async with contextlib.AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(cfg, data / "readdod.db"))
        core = _core(cfg, store, clock)
        meter = Meter()
        core.units.observe(meter.committed)
        await _recover(cfg, core, instance)
        http = await stack.enter_async_context(make_client(cfg.fetch))
        engine = await stack.enter_async_context(contextlib.aclosing(make_engine(cfg.ai, data)))
        pipeline = Pipeline(engine, http, cfg.fetch)
        supervisor = _supervisor(cfg, core, pipeline, owner, await core.reads.is_paused())
        core.attach(supervisor)
        metrics = Metrics(DaemonCollector(meter, supervisor, engine), core.reads.queue_gauges)
        fleet = Fleet(core.units, owner, supervisor.lease_ttl_ms // 3)
        relay = await _join_fleet(cfg, core, fleet, supervisor, metrics, instance)
        server = ControlServer(core, supervisor, cfg, engine=engine, metrics=metrics, fleet=fleet)
        extra = _Extras(meter, metrics, scrape or None, Presence(fleet, supervisor), relay)
        listener = await _control_listener(stack, cfg, activated, sock_path)
        await _run(core, server, supervisor, listener, stopper, task_status, extra, http=http)


def _core(cfg: Config, store: store_api.Store, clock: Clock) -> Core:
    return Core(
        store,
        clock,
        auto_process=cfg.daemon.auto_process,
        max_orphanings=cfg.daemon.max_orphanings,
        retry=cfg.retry,
        skip_below=cfg.daemon.skip_below,
        max_capture_bytes=cfg.fetch.max_bytes,
        exporter=Exporter(
            config.export_dir(cfg),
            pattern=cfg.export.filename,
            default_format=cfg.export.format,
        ),
        retention=cfg.retention,
    )


async def _recover(cfg: Config, core: Core, instance: str) -> None:
    """Take back what dead workers held. On SQLite this daemon holds the instance lock:
    every lease it finds is a dead one. On a shared database only expired leases are
    anyone's to take. Its own earlier life's leases it takes back at once, expired or not."""
    t0 = time.perf_counter()
    requeued, failed = await core.leases.recover(
        every_lease=cfg.store.backend == "sqlite", mine=f"{instance}:"
    )
    log.info(
        "recovery.done",
        requeued=requeued,
        failed=failed,
        duration_ms=round((time.perf_counter() - t0) * 1000, 2),
    )


def _supervisor(
    cfg: Config, core: Core, pipeline: Pipeline, owner: str, paused: bool
) -> Supervisor:
    return Supervisor(
        core.leases,
        core.book,
        core.bus,
        pipeline,
        owner=owner,
        concurrency=cfg.daemon.concurrency,
        batch_size=cfg.daemon.batch_size,
        lease_ttl_s=cfg.daemon.lease_ttl_s,
        claim_interval_s=cfg.daemon.claim_interval_s,
        shutdown_grace_s=cfg.daemon.shutdown_grace_s,
        paused=paused,
    )


async def _join_fleet(
    cfg: Config, core: Core, fleet: Fleet, supervisor: Supervisor, metrics: Metrics, instance: str
) -> Relay | None:
    """Join the daemon registry; on a shared database, the relay of notices (None on
    SQLite: this daemon holds the instance lock, so any other daemon in the registry is
    a dead one, and no notice need leave the process)."""
    alone = cfg.store.backend == "sqlite"
    await fleet.join(alone=alone, paused=supervisor.paused, earlier_lives=f"{instance}:")
    if alone:
        return None
    relay = Relay(fleet, core.bus, supervisor)
    core.units.observe(relay.committed)
    metrics.collector.relay = relay
    return relay


async def _control_listener(
    stack: contextlib.AsyncExitStack, cfg: Config, activated: socket.socket | None, path: Path
) -> SocketListener:
    """The control socket: systemd's (readdod.socket owns the file: use it, leave it),
    or one bound here, made safe, and unlinked when the stack unwinds."""
    if activated is not None:
        return await anyio.abc.SocketListener.from_socket(activated)
    listener = await anyio.create_unix_listener(path)
    stack.callback(path.unlink, missing_ok=True)
    secure_socket_file(path, cfg.control.group)
    return listener


async def _metrics_listener(cfg: Config) -> list[SocketListener] | None:
    """The metrics endpoint's listener, bound before anything starts (None: not asked for)."""
    if cfg.metrics.listen is None:
        return None
    addr = metrics_address.check(cfg.metrics.listen, allow_remote=cfg.metrics.allow_remote)
    return await metrics_http.listen(addr)


class _Extras(NamedTuple):
    """What ``_run`` starts beside the core loops: the meter, the metrics endpoint, the
    daemon's presence in the fleet's registry."""

    meter: Meter
    metrics: Metrics
    scrape: list[SocketListener] | None
    presence: Presence
    relay: Relay | None


async def _status_line(core: Core, supervisor: Supervisor) -> str:
    return systemd.status_line(
        in_flight=supervisor.in_flight,
        queued=await core.reads.queued_count(),
        paused=supervisor.paused,
        draining=supervisor.draining,
    )


async def _run(
    core: Core,
    server: ControlServer,
    supervisor: Supervisor,
    listener: anyio.abc.SocketListener,
    stopper: _Stopper,
    task_status: TaskStatus[None],
    extra: _Extras,
    *,
    http: FetchClient | None = None,
) -> None:
    done = anyio.Event()

    async def supervise(*, task_status: TaskStatus[None]) -> None:
        try:
            await supervisor.run(task_status=task_status)
        finally:
            done.set()

    def on_signal(count: int) -> None:
        if count == 1:
            supervisor.stop()
        else:
            supervisor.force_stop()

    cfg = server.cfg
    # The background loops, built before anything can make an item READY or failed;
    # each ends with the daemon (the group is cancelled once the supervisor is done).
    heartbeat = Heartbeat(core.leases, supervisor, extra.meter)
    retries = RetryScheduler(core.commands, core.clock)
    exporter = AutoExporter(core) if cfg.daemon.auto_export else None
    feeds = (
        FeedPoller(core.feeds, core.commands, http, cfg.feeds, core.clock)
        if http is not None
        else None
    )
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve, listener)
        await tg.start(heartbeat.run)
        await tg.start(retries.run)
        tg.start_soon(extra.presence.run)
        if extra.relay is not None:
            await tg.start(extra.relay.run)
        if extra.scrape is not None:
            await tg.start(metrics_http.serve, extra.metrics, extra.scrape)
        if exporter is not None:
            tg.start_soon(exporter.run)
        tg.start_soon(retention.run_periodically, core.maintenance, cfg.retention)
        if feeds is not None:
            await tg.start(feeds.run)
        stopper.on_signal = on_signal
        interval = systemd.watchdog_interval()
        if interval is not None:
            tg.start_soon(systemd.watchdog_loop, interval)
        if os.environ.get("NOTIFY_SOCKET"):
            reporter = systemd.StatusReporter(lambda: _status_line(core, supervisor))
            core.units.on_enqueue(reporter.poke)
            tg.start_soon(reporter.run)
        # Work starts last, with no await between it and the ready line: every loop is
        # up before the first claim, and `daemon.ready` precedes whatever the work does.
        await tg.start(supervise)
        log.info(
            "daemon.ready",
            version=__version__,
            pid=os.getpid(),
            socket=str(listener.extra(anyio.abc.SocketAttribute.local_address)),
            worker_id=supervisor.owner,
            paused=supervisor.paused,
        )
        systemd.notify("READY=1")
        task_status.started()
        await done.wait()
        tg.cancel_scope.cancel()
