"""The control server: reads JSON-RPC lines, calls the orchestrator, answers.

A client's mistake is answered with an error on the same connection; it
never takes the daemon down. Handlers only call the orchestrator (and the
supervisor for pause/resume); they never touch the store.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec
from anyio.abc import ByteStream, SocketListener, TaskStatus

from readdod import __version__
from readdod.control import protocol as p
from readdod.errors import RequestError, ValidationFailed
from readdod.logging import get_logger
from readdod.orchestrator import CaptureRequest, Orchestrator
from readdod.supervisor import Supervisor

log = get_logger("readdod.control")
_enc = msgspec.json.Encoder()

Handler = Callable[[Any], Awaitable[Any]]

ACCEPT_BACKOFF_S = 0.1
_TRANSIENT_ACCEPT = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED}
)


def _error(
    req_id: p.Id, code: int, message: str, data: dict[str, Any] | None = None
) -> p.ErrorResponse:
    return p.ErrorResponse(id=req_id, error=p.ErrorObject(code=code, message=message, data=data))


class ControlServer:
    def __init__(self, orch: Orchestrator, supervisor: Supervisor) -> None:
        self.orch = orch
        self.supervisor = supervisor
        self.started = time.monotonic()
        self._methods: dict[str, tuple[type[Any], Handler]] = {
            "capture": (CaptureRequest, self._capture),
            "process": (p.ProcessParams, self._process),
            "get": (p.GetParams, self._get),
            "list": (p.ListParams, self._list),
            "artifact": (p.ArtifactParams, self._artifact),
            "archive": (p.ArchiveParams, self._archive),
            "unarchive": (p.UnarchiveParams, self._unarchive),
            "ship": (p.ItemRef, self._ship),
            "pause": (p.Empty, self._pause),
            "resume": (p.Empty, self._resume),
            "ping": (p.Empty, self._ping),
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
        reader = p.LineReader(stream)
        try:
            async with stream:
                while True:
                    try:
                        line = await reader.next_line()
                    except p.LineTooLong:
                        await stream.send(self._too_long())
                        continue
                    if line is None:
                        return
                    if not line.strip():
                        continue
                    answer = await self.handle_line(line)
                    if answer is not None:
                        await stream.send(answer + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass

    def _too_long(self) -> bytes:
        err = _error(
            None,
            413,
            f"request line longer than {p.MAX_LINE} bytes; it was skipped",
            {"error_code": "PAYLOAD_TOO_LARGE", "status": 413},
        )
        return _enc.encode(err) + b"\n"

    # --- envelope ----------------------------------------------------------

    async def handle_line(self, line: bytes) -> bytes | None:
        """Answer one line: a request, a batch, or garbage."""
        try:
            doc = msgspec.json.decode(line)
        except Exception as exc:
            return _enc.encode(_error(None, p.PARSE_ERROR, f"parse error: {exc}"))
        if isinstance(doc, list):
            if not doc:
                return _enc.encode(_error(None, p.INVALID_REQUEST, "empty batch"))
            answers = [a for a in [await self._one(d) for d in doc] if a is not None]
            return _enc.encode(answers) if answers else None
        answer = await self._one(doc)
        return _enc.encode(answer) if answer is not None else None

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
        notification = "id" not in doc
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
        return None if notification else p.Response(id=req_id, result=result)

    # --- methods -----------------------------------------------------------

    async def _capture(self, req: CaptureRequest) -> dict[str, Any]:
        item, created = await self.orch.capture(req)
        return {"item": item, "created": created}

    async def _process(self, params: p.ProcessParams) -> dict[str, Any]:
        item, run_id = await self.orch.process(
            params.id,
            regenerate=params.regenerate,
            refetch=params.refetch,
            request_id=params.process_request_id,
        )
        return {"item": item, "run_id": run_id}

    async def _get(self, params: p.GetParams) -> dict[str, Any]:
        return await self.orch.get(params.id, history=params.history)

    async def _list(self, params: p.ListParams) -> dict[str, Any]:
        if not 1 <= params.limit <= 1000:
            raise ValidationFailed("limit must be between 1 and 1000")
        items, cursor = await self.orch.list_items(
            statuses=params.status,
            priority=params.priority,
            limit=params.limit,
            cursor=params.cursor,
        )
        return {"items": items, "next_cursor": cursor}

    async def _artifact(self, params: p.ArtifactParams) -> dict[str, Any]:
        return {"artifact": await self.orch.artifact(params.id, params.type, params.version)}

    async def _archive(self, params: p.ArchiveParams) -> dict[str, Any]:
        return {"item": await self.orch.archive(params.id, reason=params.reason)}

    async def _unarchive(self, params: p.UnarchiveParams) -> dict[str, Any]:
        return {"item": await self.orch.unarchive(params.id, regenerate=params.regenerate)}

    async def _ship(self, params: p.ItemRef) -> dict[str, Any]:
        return {"item": await self.orch.ship(params.id)}

    async def _pause(self, _: p.Empty) -> dict[str, Any]:
        paused = await self.orch.set_paused(True)
        self.supervisor.set_paused(True)
        return {"paused": paused}

    async def _resume(self, _: p.Empty) -> dict[str, Any]:
        paused = await self.orch.set_paused(False)
        self.supervisor.set_paused(False)
        return {"paused": paused}

    async def _ping(self, _: p.Empty) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "paused": self.supervisor.paused,
            "in_flight": self.supervisor.in_flight,
            "worker_id": self.supervisor.owner,
        }
