"""The optional HTTP endpoint a Prometheus scrapes: ``GET /metrics`` and nothing else.

A few lines of HTTP/1.1 on an anyio TCP listener, inside the daemon's task
group, rather than prometheus_client's own server: that one runs in a thread
of its own and would have to call back into the event loop to read the store
at every scrape. The text itself is prometheus_client's (its OpenMetrics or
text format, as the scraper's ``Accept`` asks). Each request gets one answer
and the connection closes; a client that sends nothing in time is dropped.
"""

from __future__ import annotations

from typing import Final, Protocol

import anyio
from anyio.abc import ByteStream, SocketListener, TaskGroup, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from readdod.errors import ConfigError
from readdod.runtime.logging import get_logger
from readdod.settings.listen import ListenAddress

log = get_logger("readdod.metrics")

#: The request line and headers may take this many bytes at most.
MAX_HEAD: Final = 16 * 1024
#: How long a client may take to send its request, and to read the answer.
REQUEST_TIMEOUT_S: Final = 10.0
#: Scrapes answered at once; more wait their turn.
MAX_CONCURRENT: Final = 8
PATHS: Final = frozenset({"/metrics", "/"})


class Source(Protocol):
    async def negotiate(self, accept: str) -> tuple[str, bytes]: ...


async def listen(addr: ListenAddress) -> list[SocketListener]:
    """Bind ``addr`` now, so a port in use stops the daemon at start with a clear error."""
    try:
        listener = await anyio.create_tcp_listener(local_host=addr.host, local_port=addr.port)
    except OSError as exc:
        raise ConfigError(
            f"metrics.listen: cannot listen on {addr.host}:{addr.port} ({exc.strerror or exc});"
            " choose a free port, or leave metrics.listen unset to serve metrics on the socket"
            " only"
        ) from exc
    # One listener per address the host names (localhost: maybe IPv4 and IPv6).
    return [inner for inner in listener.listeners if isinstance(inner, SocketListener)]


def _response(status: str, ctype: str, body: bytes, *, head_only: bool, extra: str = "") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        f"{extra}Connection: close\r\n\r\n"
    ).encode("latin-1")
    return head if head_only else head + body


def _text(status: str, message: str, *, head_only: bool = False, extra: str = "") -> bytes:
    return _response(
        status,
        "text/plain; charset=utf-8",
        message.encode() + b"\n",
        head_only=head_only,
        extra=extra,
    )


async def _answer(source: Source, head: bytes) -> bytes:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return _text("400 Bad Request", "not an HTTP request line")
    method, target, _ = parts
    head_only = method == "HEAD"
    if method not in ("GET", "HEAD"):
        return _text("405 Method Not Allowed", "only GET /metrics", extra="Allow: GET, HEAD\r\n")
    if target.split("?", 1)[0] not in PATHS:
        return _text("404 Not Found", "readdod serves GET /metrics here", head_only=head_only)
    accept = ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "accept":
            accept = value.strip()
    ctype, body = await source.negotiate(accept)
    return _response("200 OK", ctype, body, head_only=head_only)


async def _serve_one(source: Source, stream: ByteStream, slots: anyio.CapacityLimiter) -> None:
    async with stream:
        try:
            with anyio.fail_after(REQUEST_TIMEOUT_S):
                head = await BufferedByteReceiveStream(stream).receive_until(b"\r\n\r\n", MAX_HEAD)
                async with slots:
                    answer = await _answer(source, head)
                await stream.send(answer)
        except anyio.DelimiterNotFound:
            with anyio.move_on_after(1):
                await stream.send(_text("431 Request Header Fields Too Large", "header too large"))
        except (TimeoutError, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            pass  # the client left or stalled: nothing to tell it
        except Exception:
            # A scrape must never take the daemon down.
            log.exception("metrics.request_failed")
            with anyio.move_on_after(1):
                await stream.send(_text("500 Internal Server Error", "metrics failed; see the log"))


async def serve(
    source: Source,
    listeners: list[SocketListener],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Answer scrapes on ``listeners`` until cancelled."""
    slots = anyio.CapacityLimiter(MAX_CONCURRENT)
    async with anyio.create_task_group() as tg:
        for listener in listeners:
            tg.start_soon(_accept, source, listener, slots, tg)
            address = listener.extra(anyio.abc.SocketAttribute.local_address)
            log.info("metrics.listening", address=str(address))
        task_status.started()


async def _accept(
    source: Source, listener: SocketListener, slots: anyio.CapacityLimiter, tg: TaskGroup
) -> None:
    async with listener:
        while True:
            try:
                stream = await listener.accept()
            except (anyio.BrokenResourceError, OSError) as exc:
                # Out of descriptors, say: keep the daemon, try again shortly.
                log.warning("metrics.accept_failed", error=str(exc))
                await anyio.sleep(0.1)
                continue
            tg.start_soon(_serve_one, source, stream, slots)
