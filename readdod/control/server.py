"""The control server: reads JSON-RPC lines, calls the core, answers.

A client's mistake is answered with an error on the same connection; it
never takes the daemon down. Handlers only call the core (commands, the read
model, exports, maintenance); they never touch the store, and what a
command means for running work (a cancel, a pause) is the core's to tell
the workers.
"""

from __future__ import annotations

import contextvars
import errno
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

import anyio
import msgspec
from anyio.abc import ByteStream, SocketAttribute, SocketListener, TaskGroup, TaskStatus

from readdod import __version__
from readdod.control import protocol as p
from readdod.control.security import PeerPolicy, peer_credentials
from readdod.core import Core
from readdod.errors import ErrorCode, InternalError, RequestError, ValidationFailed
from readdod.items.models import CaptureRequest, ExportResult
from readdod.runtime.events import Subscription
from readdod.runtime.logging import get_logger
from readdod.settings.config import Config
from readdod.status.health import feeds_check, fleet_check, thresholds_from
from readdod.status.roster import FleetMember

log = get_logger("readdod.control")
_enc = msgspec.json.Encoder()

Handler = Callable[[Any], Awaitable[Any]]

ACCEPT_BACKOFF_S = 0.1
#: A batch's answer is written in pieces of about this size.
ANSWER_CHUNK = 64 * 1024
#: Events a watcher is sent in one write at most.
WATCH_BATCH = 256
#: Capture lines past MAX_LINE buffered at once, across every connection: with N
#: connections the daemon holds at most N x MAX_LINE of other lines, plus this many pages.
BIG_LINES = 2
#: A full table closes its idlest connection once it has been silent this long; a
#: newcomer waits at most twice that for one, then is refused.
EVICT_IDLE_S = 0.5
#: How long a refused connection is given to read why before it is closed.
REFUSAL_LINGER_S = 1.0
_TRANSIENT_ACCEPT = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED}
)


def _error(
    req_id: p.Id, code: int, message: str, data: dict[str, Any] | None = None
) -> p.ErrorResponse:
    return p.ErrorResponse(id=req_id, error=p.ErrorObject(code=code, message=message, data=data))


def _refusal(status: int, code: ErrorCode, message: str) -> bytes:
    err = _error(None, status, message, {"error_code": code.value, "status": status})
    return _enc.encode(err) + b"\n"


class CircuitSource(Protocol):
    def circuit_state(self) -> str: ...


class MetricsSource(Protocol):
    async def render(self, fmt: Literal["openmetrics", "prometheus"]) -> tuple[str, bytes]: ...


class FleetSource(Protocol):
    daemon_id: str

    async def members(self) -> list[FleetMember]: ...


class WorkerState(Protocol):
    """What ``ping`` and ``health`` say of the workers (the supervisor)."""

    owner: str
    paused: bool

    @property
    def in_flight(self) -> int: ...


class _Conn:
    """One client connection: its stream, its writer lock, its watch."""

    def __init__(self, stream: ByteStream, tg: TaskGroup, send_timeout_s: float) -> None:
        self.stream = stream
        self.tg = tg
        self.send_timeout_s = send_timeout_s
        self.lock = anyio.Lock()
        self.pending_watch: Subscription | None = None
        self.watching = False
        #: When it last sent a whole line (or connected): the idlest is closed for a newcomer.
        self.last_active = time.monotonic()
        #: A request of its is being answered: it is not idle, whatever its age.
        self.busy = False
        self.evicted = False
        #: It holds one of the server's BIG_LINES (a capture line past MAX_LINE).
        self.big = False

    async def send(self, data: bytes) -> None:
        """Write one answer; a client that does not read it in time is disconnected."""
        async with self.lock:
            await self.send_locked(data)

    async def send_locked(self, data: bytes) -> None:
        """:meth:`send` for a caller that already holds :attr:`lock`."""
        with anyio.move_on_after(self.send_timeout_s) as scope:
            await self.stream.send(data)
        if scope.cancelled_caught:
            log.warning("control.client_too_slow", send_timeout_s=self.send_timeout_s)
            self.tg.cancel_scope.cancel()


_conn: contextvars.ContextVar[_Conn] = contextvars.ContextVar("readdod_control_conn")


class ControlServer:
    def __init__(
        self,
        core: Core,
        workers: WorkerState,
        cfg: Config | None = None,
        *,
        engine: CircuitSource | None = None,
        metrics: MetricsSource | None = None,
        fleet: FleetSource | None = None,
    ) -> None:
        self.core = core
        self.workers = workers
        self.cfg = cfg or Config()
        self.engine = engine
        self.metrics = metrics
        self.fleet = fleet
        self.policy = PeerPolicy(os.getuid(), self.cfg.control.allowed_uids)
        self.connections = 0
        self._table: set[_Conn] = set()
        self._big = anyio.CapacityLimiter(BIG_LINES)
        self.started = time.monotonic()
        #: A capture's line may carry a page of fetch.max_bytes; every other line MAX_LINE.
        self.line_limit = p.capture_line_limit(self.cfg.fetch.max_bytes)
        self._methods: dict[str, tuple[type[Any], Handler]] = {
            "capture": (CaptureRequest, self._capture),
            "process": (p.ProcessParams, self._process),
            "get": (p.GetParams, self._get),
            "list": (p.ListParams, self._list),
            "artifact": (p.ArtifactParams, self._artifact),
            "archive": (p.ArchiveParams, self._archive),
            "unarchive": (p.UnarchiveParams, self._unarchive),
            "ship": (p.ItemRef, self._ship),
            "export": (p.ExportParams, self._export),
            "edit": (p.EditParams, self._edit),
            "retry_failed": (p.RetryFailedParams, self._retry_failed),
            "pause": (p.Empty, self._pause),
            "resume": (p.Empty, self._resume),
            "ping": (p.Empty, self._ping),
            "backup": (p.BackupParams, self._backup),
            "watch": (p.WatchParams, self._watch),
            "health": (p.Empty, self._health),
            "stats": (p.Empty, self._stats),
            "prune": (p.PruneParams, self._prune),
            "feed_add": (p.FeedAddParams, self._feed_add),
            "feed_list": (p.Empty, self._feed_list),
            "feed_remove": (p.FeedRef, self._feed_remove),
            "todo": (p.TodoParams, self._todo),
            "metrics": (p.MetricsParams, self._metrics),
        }

    # --- transport ---------------------------------------------------------

    async def serve(
        self, listener: SocketListener, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with listener, anyio.create_task_group() as tg:
            task_status.started()
            while True:
                try:
                    stream = await listener.accept()
                except anyio.BrokenResourceError as exc:
                    cause = exc.__cause__
                    if not (isinstance(cause, OSError) and cause.errno in _TRANSIENT_ACCEPT):
                        raise
                    # Out of descriptors (too many clients): keep serving the connected ones.
                    log.warning("control.accept_failed", error=str(cause))
                    await anyio.sleep(ACCEPT_BACKOFF_S)
                    continue
                tg.start_soon(self._connection, stream)

    async def _connection(self, stream: ByteStream) -> None:
        ctl = self.cfg.control
        try:
            async with stream:
                refusal = await self._admit(stream)
                if refusal is not None:
                    await self._refuse(stream, refusal)
                    return
                self.connections += 1
                conn: _Conn | None = None
                try:
                    async with anyio.create_task_group() as tg:
                        conn = _Conn(stream, tg, ctl.send_timeout_s)
                        self._table.add(conn)
                        _conn.set(conn)
                        try:
                            await self._serve_lines(conn)
                        finally:
                            if conn.pending_watch is not None:  # never started
                                conn.pending_watch.close()
                        tg.cancel_scope.cancel()
                finally:
                    self.connections -= 1
                    if conn is not None:
                        self._table.discard(conn)
                        self._release_big(conn)
        except* (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass  # the client left while it had answers coming
        except* Exception as group:
            # One connection's failure must never take the daemon (and every other client) down.
            log.error("control.connection_failed", error=repr(group.exceptions[0]))

    async def _refuse(self, stream: ByteStream, refusal: bytes) -> None:
        """Send the refusal, then drain briefly: closing on unread input would reset the
        connection and the client might never see why."""
        with anyio.move_on_after(REFUSAL_LINGER_S):
            await stream.send(refusal)
            await stream.send_eof()
            drained = 0
            while drained < p.MAX_LINE:
                try:
                    drained += len(await stream.receive())
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break

    async def _admit(self, stream: ByteStream) -> bytes | None:
        """The refusal to send a connection that may not stay, or None to serve it."""
        raw = stream.extra(SocketAttribute.raw_socket, None)
        cred = peer_credentials(raw) if raw is not None else None
        if cred is not None and not self.policy.allows(cred.uid):
            log.warning("control.forbidden", uid=cred.uid, pid=cred.pid)
            return _refusal(403, ErrorCode.FORBIDDEN, self.policy.forbidden_message(cred))
        limit = self.cfg.control.max_connections
        if not await self._room(limit):
            log.warning("control.too_many_connections", max_connections=limit)
            return _refusal(
                503,
                ErrorCode.TOO_MANY_CONNECTIONS,
                f"readdod already serves {limit} connections (control.max_connections);"
                " close some or try again shortly",
            )
        return None

    async def _room(self, limit: int) -> bool:
        """Whether a new connection may stay: there is room, or the idlest connection (one
        not being answered, silent for EVICT_IDLE_S; a watch last) is closed to make it,
        so a table full of silent clients never locks the others out."""
        deadline = anyio.current_time() + 2 * EVICT_IDLE_S
        while self.connections - sum(c.evicted for c in self._table) >= limit:
            idle = [c for c in self._table if not c.busy and not c.evicted]
            now = time.monotonic()
            victim = min(idle, key=lambda c: (c.watching, c.last_active), default=None)
            if victim is not None and now - victim.last_active >= EVICT_IDLE_S:
                self._evict(victim)
                return True
            wait = EVICT_IDLE_S if victim is None else EVICT_IDLE_S - (now - victim.last_active)
            if anyio.current_time() + wait > deadline:
                return False
            await anyio.sleep(max(wait, 0.01))
        return True

    def _evict(self, victim: _Conn) -> None:
        """Close ``victim``, telling it why first (if it reads within the linger)."""
        victim.evicted = True

        async def tell_and_close() -> None:
            with anyio.move_on_after(REFUSAL_LINGER_S):
                await victim.send(
                    _refusal(
                        503,
                        ErrorCode.TOO_MANY_CONNECTIONS,
                        "readdod serves control.max_connections clients and this connection"
                        " was the idlest: it was closed to let a new client in; connect again",
                    )
                )
            victim.tg.cancel_scope.cancel()

        victim.tg.start_soon(tell_and_close)
        log.info(
            "control.idlest_closed",
            max_connections=self.cfg.control.max_connections,
            idle_s=round(time.monotonic() - victim.last_active, 3),
            watching=victim.watching,
        )

    async def _widen(self, conn: _Conn, head: bytes) -> int | None:
        """A line past MAX_LINE: a capture's may grow to its page, once one of the
        BIG_LINES is free (until then it is not read: the client waits)."""
        if not p.opens_capture(head):
            return None
        await self._big.acquire_on_behalf_of(conn)
        conn.big = True
        return self.line_limit

    def _release_big(self, conn: _Conn) -> None:
        if conn.big:
            conn.big = False
            self._big.release_on_behalf_of(conn)

    async def _serve_lines(self, conn: _Conn) -> None:
        ctl = self.cfg.control
        reader = p.LineReader(
            conn.stream,
            p.MAX_LINE,
            read_timeout_s=ctl.read_timeout_s,
            widen=lambda head: self._widen(conn, head),
        )
        idle = ctl.idle_timeout_s
        while True:
            line: bytes | None = None
            with anyio.move_on_after(None if conn.watching else idle) as scope:
                try:
                    line = await reader.next_line()
                except p.LineTooLong as exc:
                    self._release_big(conn)
                    await conn.send(self._too_long(exc.limit))
                    continue
                except p.ReadTimedOut:
                    # Half a line, then nothing: the connection would be held for nothing.
                    log.info("control.read_timed_out", read_timeout_s=ctl.read_timeout_s)
                    return
            if scope.cancelled_caught:
                log.info("control.idle_closed", idle_timeout_s=idle)
                return
            if line is None:
                return
            if not line.strip():
                continue
            conn.last_active = time.monotonic()
            if len(line) > p.MAX_LINE and p.method_of(line) != "capture":
                self._release_big(conn)
                await conn.send(self._too_long(p.MAX_LINE))
                continue
            conn.busy = True
            try:
                await self._answer(conn, line)
            finally:
                conn.busy = False
                conn.last_active = time.monotonic()
                self._release_big(conn)
            if conn.pending_watch is not None:
                conn.tg.start_soon(self._stream_events, conn, conn.pending_watch)
                conn.pending_watch = None
                conn.watching = True

    async def _stream_events(self, conn: _Conn, sub: Subscription) -> None:
        """Send a subscription's events until the client leaves or falls behind."""
        try:
            async for event in sub:
                # Whatever else is already waiting goes out in the same write.
                batch = [event, *sub.ready(WATCH_BATCH - 1)]
                await conn.send(
                    b"".join(
                        _enc.encode(p.Notification(method="event", params=e)) + b"\n" for e in batch
                    )
                )
            if sub.dropped:
                log.warning("watch.dropped", reason=sub.dropped, last_seq=sub.last_seq)
                await conn.send(
                    _enc.encode(p.Notification(method="event", params=sub.notice())) + b"\n"
                )
                conn.tg.cancel_scope.cancel()
        finally:
            sub.close()

    def _too_long(self, limit: int) -> bytes:
        if limit == p.MAX_LINE:
            why = (
                f"request line longer than {p.MAX_LINE} bytes; it was skipped (only a capture"
                " may be longer, up to its page of fetch.max_bytes: send it alone, not in a"
                ' batch, with "method" before "params")'
            )
        else:
            mb = self.cfg.fetch.max_bytes / 2**20
            why = (
                f"request line longer than {limit} bytes; it was skipped (a capture carries"
                f" a page of at most {mb:.1f} MB, fetch.max_bytes)"
            )
        err = _error(None, 413, why, {"error_code": "PAYLOAD_TOO_LARGE", "status": 413})
        return _enc.encode(err) + b"\n"

    # --- envelope ----------------------------------------------------------

    async def handle_line(self, line: bytes) -> bytes | None:
        """Answer one line: a request, a batch, or garbage (the whole answer in memory)."""
        out: list[bytes] = []

        async def collect(piece: bytes) -> None:
            out.append(piece)

        await self._answer_with(collect, line)
        return b"".join(out)[:-1] if out else None

    async def _answer(self, conn: _Conn, line: bytes) -> None:
        """Answer one line on ``conn``; a batch's answers go out as they are made."""
        await self._answer_with(conn.send, line, conn)

    async def _answer_with(
        self, send: Callable[[bytes], Awaitable[None]], line: bytes, conn: _Conn | None = None
    ) -> None:
        """Answer one line through ``send``, newline included.

        A batch's answer is one line too, but it is written in pieces of about
        :data:`ANSWER_CHUNK` bytes as the requests are served, so a batch of
        expensive requests never holds its whole answer in memory; ``conn``'s
        lock keeps watch notifications out of the middle of that line.
        """
        try:
            doc = msgspec.json.decode(line)
        except Exception as exc:
            await send(_enc.encode(_error(None, p.PARSE_ERROR, f"parse error: {exc}")) + b"\n")
            return
        if not isinstance(doc, list):
            answer = await self._one(doc)
            if answer is not None:
                await send(_enc.encode(answer) + b"\n")
            return
        if not doc or len(doc) > p.MAX_BATCH:
            why = (
                "empty batch"
                if not doc
                else f"a batch of {len(doc)} requests; at most {p.MAX_BATCH} per line: split it"
            )
            await send(_enc.encode(_error(None, p.INVALID_REQUEST, why)) + b"\n")
            return
        if conn is None:
            await self._batch(send, doc)
            return
        async with conn.lock:
            await self._batch(conn.send_locked, doc)

    async def _batch(self, send: Callable[[bytes], Awaitable[None]], doc: list[Any]) -> None:
        opened = False
        pending = bytearray()
        for d in doc:
            answer = await self._one(d)
            if answer is None:
                continue
            pending += b"," if opened else b"["
            opened = True
            pending += _enc.encode(answer)
            if len(pending) >= ANSWER_CHUNK:
                await send(bytes(pending))
                pending.clear()
        if opened:
            await send(bytes(pending) + b"]\n")

    async def _one(self, doc: Any) -> p.Response | p.ErrorResponse | None:
        raw_id = doc.get("id") if isinstance(doc, dict) else None
        req_id: p.Id = (
            raw_id if isinstance(raw_id, int | str) and not isinstance(raw_id, bool) else None
        )
        try:
            req = msgspec.convert(doc, p.Request)
        except msgspec.ValidationError as exc:
            return _error(req_id, p.INVALID_REQUEST, f"invalid request: {exc}")
        if req.jsonrpc != "2.0":
            return _error(req_id, p.INVALID_REQUEST, 'invalid request: jsonrpc must be "2.0"')
        answer = await self._dispatch(req_id, req)
        # JSON-RPC 2.0: a notification (no id) is never answered, not even with an error;
        # an error with a null id among pipelined answers could not be told apart.
        return None if "id" not in doc else answer

    async def _dispatch(self, req_id: p.Id, req: p.Request) -> p.Response | p.ErrorResponse:
        entry = self._methods.get(req.method)
        if entry is None:
            known = ", ".join(sorted(self._methods))
            return _error(
                req_id, p.METHOD_NOT_FOUND, f"unknown method {req.method!r}; known: {known}"
            )
        params_type, handler = entry
        if req.params is not None and not isinstance(req.params, dict):
            return _error(req_id, p.INVALID_PARAMS, "params must be an object (named parameters)")
        try:
            params = msgspec.convert(req.params or {}, params_type)
        except msgspec.ValidationError as exc:
            return _error(req_id, p.INVALID_PARAMS, f"invalid params for {req.method}: {exc}")
        try:
            result = await handler(params)
        except RequestError as exc:
            return _error(req_id, exc.http_status, exc.message, exc.data())
        except Exception as exc:
            log.exception("control.internal_error", method=req.method)
            return _error(req_id, p.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
        return p.Response(id=req_id, result=result)

    # --- methods -----------------------------------------------------------

    async def _capture(self, req: CaptureRequest) -> dict[str, Any]:
        item, created, retargeted = await self.core.commands.capture_detail(req)
        answer: dict[str, Any] = {"item": item, "created": created}
        if retargeted:
            answer["intent_set"] = True
        return answer

    async def _process(self, params: p.ProcessParams) -> dict[str, Any]:
        item, run_id = await self.core.commands.process(
            params.id,
            regenerate=params.regenerate,
            refetch=params.refetch,
            request_id=params.process_request_id,
        )
        return {"item": item, "run_id": run_id}

    async def _get(self, params: p.GetParams) -> dict[str, Any]:
        return await self.core.reads.get(
            params.id, history=params.history, versions=params.versions, include=params.include
        )

    async def _list(self, params: p.ListParams) -> dict[str, Any]:
        if not 1 <= params.limit <= 1000:
            raise ValidationFailed("limit must be between 1 and 1000")
        items, cursor = await self.core.reads.list_items(
            statuses=params.status,
            priority=params.priority,
            limit=params.limit,
            cursor=params.cursor,
            tags=params.tags,
            query=params.query,
        )
        return {"items": items, "next_cursor": cursor}

    async def _artifact(self, params: p.ArtifactParams) -> dict[str, Any]:
        return {"artifact": await self.core.reads.artifact(params.id, params.type, params.version)}

    async def _archive(self, params: p.ArchiveParams) -> dict[str, Any]:
        item, _ = await self.core.commands.archive(
            params.id, reason=params.reason, cancel=params.cancel
        )
        return {"item": item}

    async def _edit(self, params: p.EditParams) -> dict[str, Any]:
        if not params.discard and params.payload is None:
            raise ValidationFailed("edit needs a payload (or discard: true)")
        artifact = await self.core.commands.edit(
            params.id, params.type, params.payload, discard=params.discard
        )
        return {"artifact": artifact}

    async def _retry_failed(self, params: p.RetryFailedParams) -> dict[str, Any]:
        ids = await self.core.commands.retry_failed(step=params.step, dry_run=params.dry_run)
        return {"requeued": ids, "count": len(ids), "dry_run": params.dry_run}

    async def _unarchive(self, params: p.UnarchiveParams) -> dict[str, Any]:
        return {"item": await self.core.commands.unarchive(params.id, regenerate=params.regenerate)}

    async def _ship(self, params: p.ItemRef) -> dict[str, Any]:
        return {"item": await self.core.commands.ship(params.id)}

    async def _export(self, params: p.ExportParams) -> ExportResult:
        return await self.core.exports.export(
            params.id, fmt=params.format, export_key=params.export_key, out_dir=params.out_dir
        )

    async def _pause(self, _: p.Empty) -> dict[str, Any]:
        return {"paused": await self.core.commands.pause()}

    async def _resume(self, _: p.Empty) -> dict[str, Any]:
        return {"paused": await self.core.commands.resume()}

    async def _backup(self, params: p.BackupParams) -> dict[str, Any]:
        result = await self.core.maintenance.backup(params.path)
        return {"path": result.path, "bytes": result.bytes, "pages": result.pages}

    async def _ping(self, _: p.Empty) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "paused": self.workers.paused,
            "in_flight": self.workers.in_flight,
            "worker_id": self.workers.owner,
        }

    async def _watch(self, params: p.WatchParams) -> dict[str, Any]:
        conn = _conn.get(None)
        if conn is None:
            raise ValidationFailed("watch needs a connection of its own")
        if conn.watching or conn.pending_watch is not None:
            raise ValidationFailed("this connection already watches; open another one")
        if params.id is not None:
            await self.core.reads.get(params.id)
        conn.pending_watch = self.core.bus.subscribe(params.id, self.cfg.control.watch_buffer)
        log.info("watch.subscribed", item_id=params.id, watchers=self.core.bus.subscribers)
        return {"subscribed": True, "id": params.id}

    async def _health(self, _: p.Empty) -> Any:
        circuit = self.engine.circuit_state() if self.engine is not None else "closed"
        report = await self.core.reads.health(
            thresholds_from(self.cfg.daemon), circuit=circuit, paused=self.workers.paused
        )
        threshold = self.cfg.feeds.failures_degraded
        report = feeds_check(report, await self.core.feeds.failing(threshold), threshold)
        if self.fleet is not None:
            report = fleet_check(report, await self.fleet.members())
            report.daemon = self.fleet.daemon_id
        return report

    async def _stats(self, _: p.Empty) -> Any:
        stats = await self.core.reads.stats()
        if self.fleet is not None:
            stats.daemon, stats.fleet = self.fleet.daemon_id, await self.fleet.members()
        return stats

    async def _prune(self, params: p.PruneParams) -> Any:
        return await self.core.maintenance.prune(self.cfg.retention, dry_run=params.dry_run)

    async def _feed_add(self, params: p.FeedAddParams) -> dict[str, Any]:
        feed, created, probed = await self.core.feeds.add(params.url, params.intent, params.tags)
        found_on = probed.found_on if probed is not None else None
        entries = probed.entries if probed is not None else None
        return {"feed": feed, "created": created, "found_on": found_on, "entries": entries}

    async def _feed_list(self, _: p.Empty) -> dict[str, Any]:
        return {"feeds": await self.core.feeds.all()}

    async def _feed_remove(self, params: p.FeedRef) -> dict[str, Any]:
        return {"feed": await self.core.feeds.remove(params.id)}

    async def _todo(self, params: p.TodoParams) -> dict[str, Any]:
        return await self.core.todos.tick(params.id, params.index, params.done)

    async def _metrics(self, params: p.MetricsParams) -> dict[str, Any]:
        if self.metrics is None:
            raise InternalError("this server was built without metrics")
        ctype, body = await self.metrics.render(params.format)
        return {"content_type": ctype, "text": body.decode()}
