"""The network under :class:`~readdod.extraction.fetch.FetchClient`: httpx's
transport seam over an httpcore pool, with the address guard and per-host slots.

httpx's own transport hides its pool; this one owns it through public API, so
the guard's network backend sees every connection and a request holds one of
its host's ``fetch.per_host_limit`` slots until its body is closed. Time spent
queued for a slot is readdod's own queue, not the server being slow, so the
running fetch's deadline (:func:`fetch_deadline`) is paused meanwhile.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Final

import anyio
import httpcore
import httpx

from readdod.extraction.guard import AddressGuard, GuardedBackend
from readdod.settings.config import FetchConfig

__all__ = ["GuardedTransport", "HostSlots", "fetch_deadline", "timeouts"]


def timeouts(cfg: FetchConfig, deadline: float) -> httpx.Timeout:
    """Per-operation timeouts from ``[fetch]``, none longer than the whole fetch's deadline."""
    read = min(cfg.read_timeout_s, deadline)
    return httpx.Timeout(
        connect=min(cfg.connect_timeout_s, deadline), read=read, write=read, pool=deadline
    )


#: The running fetch's whole-fetch deadline, paused while it queues for a host slot.
_DEADLINE: contextvars.ContextVar[anyio.CancelScope | None] = contextvars.ContextVar(
    "readdod_fetch_deadline", default=None
)


@contextlib.contextmanager
def fetch_deadline(scope: anyio.CancelScope) -> Iterator[None]:
    """Make ``scope`` the deadline the transport pauses while a request queues for a slot."""
    token = _DEADLINE.set(scope)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@dataclass
class _Slot:
    limiter: anyio.CapacityLimiter
    users: int = 0


class HostSlots:
    """At most ``limit`` requests in flight per host; a slot is held until the body is closed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots: dict[str, _Slot] = {}

    async def acquire(self, host: str) -> Callable[[], None]:
        """Wait for a slot for ``host``; the function returned gives it back (once)."""
        slot = self._slots.get(host)
        if slot is None:
            slot = self._slots[host] = _Slot(anyio.CapacityLimiter(self.limit))
        slot.users += 1
        token = object()
        try:
            await slot.limiter.acquire_on_behalf_of(token)
        except BaseException:
            self._leave(host, slot)
            raise
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                slot.limiter.release_on_behalf_of(token)
                self._leave(host, slot)

        return release

    def _leave(self, host: str, slot: _Slot) -> None:
        slot.users -= 1
        if slot.users == 0 and self._slots.get(host) is slot:
            del self._slots[host]

    def in_use(self, host: str) -> int:
        slot = self._slots.get(host)
        return int(slot.limiter.borrowed_tokens) if slot else 0

    def waiting(self, host: str) -> int:
        slot = self._slots.get(host)
        return slot.limiter.statistics().tasks_waiting if slot else 0


#: httpcore's errors and the httpx errors callers catch, most specific first.
_ERRORS: Final[tuple[tuple[type[Exception], type[httpx.TransportError]], ...]] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as the httpx errors the fetch tells apart."""
    try:
        yield
    except Exception as exc:
        for core, mapped in _ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _Body(httpx.AsyncByteStream):
    """A response body read from the pool; closing it frees the connection and the host slot."""

    def __init__(self, inner: httpcore.Response, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for chunk in self._inner.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._release()


class GuardedTransport(httpx.AsyncBaseTransport):
    """httpx's transport seam over an httpcore pool: the guarded network backend and
    per-host slots.

    The pool's settings are httpx's defaults (100 connections, 20 kept alive for
    5 s, HTTP/1.1 only, no retries); no proxy is ever used.
    """

    def __init__(
        self, cfg: FetchConfig, guard: AddressGuard, ssl_context: ssl.SSLContext | None
    ) -> None:
        self._connections = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=GuardedBackend(guard) if guard.active else None,
        )
        self.slots = HostSlots(cfg.per_host_limit)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        release = await self._queue_for_slot(request.url.host.lower())
        try:
            with _as_httpx_errors():
                response = await self._connections.handle_async_request(core_request)
        except BaseException:
            release()
            raise
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response, release),
            extensions=response.extensions,
        )

    async def __aenter__(self) -> GuardedTransport:
        await self._connections.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        await self._connections.__aexit__(exc_type, exc_value, traceback)

    async def aclose(self) -> None:
        await self._connections.aclose()

    async def _queue_for_slot(self, host: str) -> Callable[[], None]:
        """Take a slot for ``host`` with the fetch's deadline stopped while in the queue.

        Many captures of one site would otherwise time out in line behind each
        other and be retried as if the server were slow.
        """
        scope = _DEADLINE.get()
        if scope is None or math.isinf(scope.deadline):
            return await self.slots.acquire(host)
        left = scope.deadline - anyio.current_time()
        scope.deadline = math.inf
        try:
            return await self.slots.acquire(host)
        finally:
            scope.deadline = anyio.current_time() + left
