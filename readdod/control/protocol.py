"""Wire format: JSON-RPC 2.0 envelopes, method params, framing.

One UTF-8 JSON object per line, at most :data:`MAX_LINE` bytes, except a
``capture``, which may carry a page of ``fetch.max_bytes`` (see
:func:`capture_line_limit`) when it names its method before its params
(:func:`opens_capture`): a line is judged by its first bytes while it is read,
so no other line is ever buffered past :data:`MAX_LINE`. Protocol errors use
JSON-RPC codes; application
errors use the HTTP-like status as ``code`` with ``data.error_code``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final, Literal

import anyio
import msgspec
from anyio.abc import ByteReceiveStream

MAX_LINE: Final = 1024 * 1024
#: The most bytes JSON takes to write one byte of UTF-8 text: ``\u0001`` for a control
#: character; a character of 2 to 4 bytes is one ``\uXXXX`` or a surrogate pair of two.
JSON_ESCAPE_MAX: Final = 6
#: Requests in one batch line at most: bounds the work (and the answer) one line can ask for.
MAX_BATCH: Final = 10_000

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

Id = int | str | None


class Request(msgspec.Struct, forbid_unknown_fields=True):
    jsonrpc: str
    method: str
    id: Id = None
    params: Any = None


class ErrorObject(msgspec.Struct, omit_defaults=True):
    code: int
    message: str
    data: dict[str, Any] | None = None


class ErrorResponse(msgspec.Struct):
    id: Id
    error: ErrorObject
    jsonrpc: str = "2.0"


class Response(msgspec.Struct):
    id: Id
    result: Any
    jsonrpc: str = "2.0"


class Notification(msgspec.Struct):
    method: str
    params: Any
    jsonrpc: str = "2.0"


# --- params, one Struct per method -------------------------------------------


class _Params(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ItemRef(_Params):
    id: str


class ExportParams(_Params):
    id: str
    format: str | None = None
    export_key: str | None = None
    #: An absolute folder; default: export.dir.
    out_dir: str | None = None


class ProcessParams(_Params):
    id: str
    regenerate: bool = False
    refetch: bool = False
    process_request_id: str | None = None


class ArchiveParams(_Params):
    id: str
    reason: str | None = None
    cancel: bool = False


class UnarchiveParams(_Params):
    id: str
    regenerate: bool = False


class GetParams(_Params):
    id: str
    history: bool = False
    versions: bool = False
    #: Parts added on request: ``chunks`` (every chunk of the current run, as ``chunk_list``).
    include: list[str] = []


class ArtifactParams(_Params):
    id: str
    type: str
    #: Versions start at 1; the upper bound is SQLite's, so a huge number is a clear error.
    version: Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)] | None = None


class ListParams(_Params):
    status: list[str] | None = None
    priority: str | None = None
    tags: list[str] = []
    query: str | None = None
    limit: int = 50
    cursor: str | None = None


class EditParams(_Params):
    id: str
    type: str
    payload: Any = None
    #: Set a person's versions of ``type`` aside; the system's version is shown again.
    discard: bool = False


class RetryFailedParams(_Params):
    step: str | None = None
    dry_run: bool = False


class BackupParams(_Params):
    path: str


class Empty(_Params):
    pass


class MetricsParams(_Params):
    #: ``openmetrics`` (OpenMetrics 1.0 text) or ``prometheus`` (the 0.0.4 text format).
    format: Literal["openmetrics", "prometheus"] = "openmetrics"


class WatchParams(_Params):
    id: str | None = None


class PruneParams(_Params):
    dry_run: bool = False


class FeedAddParams(_Params):
    url: Annotated[str, msgspec.Meta(max_length=8_192)]
    intent: Annotated[str, msgspec.Meta(max_length=2_000)]
    tags: Annotated[
        list[Annotated[str, msgspec.Meta(max_length=100)]], msgspec.Meta(max_length=50)
    ] = []


class FeedRef(_Params):
    #: The feed's id, or its URL.
    id: str


class TodoParams(_Params):
    id: str
    #: 1-based, the todo's place as ``get`` shows it; out of range is a 422 with the range.
    index: int
    done: bool


def capture_line_limit(max_bytes: int) -> int:
    """The longest line a ``capture`` may take: html or text of ``max_bytes`` UTF-8
    bytes however a client escapes them, and :data:`MAX_LINE` for the rest."""
    return JSON_ESCAPE_MAX * max_bytes + MAX_LINE


#: The start of a line that asks for a ``capture``: ``{``, then at most the ``jsonrpc``
#: and ``id`` members with short values, then ``"method":"capture"`` (as every readdod
#: client writes it, and as JSON-RPC's own examples order it).
_CAPTURE_OPENING = re.compile(
    rb'\s*\{\s*(?:"(?:jsonrpc|id)"\s*:\s*(?:"[^"\\]{0,200}"|-?[0-9]{1,20}|null)\s*,\s*){0,2}'
    rb'"method"\s*:\s*"capture"\s*[,}]'
)
#: How much of a line :func:`opens_capture` looks at.
OPENING_BYTES: Final = 512


def opens_capture(head: bytes) -> bool:
    """Whether a line that begins with ``head`` is a ``capture`` that names its method
    before its params: only such a line may grow past :data:`MAX_LINE`."""
    return _CAPTURE_OPENING.match(head[:OPENING_BYTES]) is not None


class _Method(msgspec.Struct):
    method: Any = None


_method_decoder = msgspec.json.Decoder(_Method)


def method_of(line: bytes) -> str | None:
    """The method a line asks for, if it is one request; None for anything else.

    Other members are skipped, not built, so a long line costs no more than a scan.
    """
    try:
        method = _method_decoder.decode(line).method
    except (msgspec.DecodeError, RecursionError):  # not JSON, not one request, nested too deep
        return None
    return method if isinstance(method, str) else None


class LineTooLong(Exception):
    """A line exceeded the reader's limit (``limit``); it has been skipped."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class ReadTimedOut(Exception):
    """A line was begun but not finished within the reader's ``read_timeout_s``."""


#: Asked once a line outgrows the reader's limit, with the line's first bytes: a larger
#: limit for this line (it may wait for room), or None to skip it.
Widen = Callable[[bytes], Awaitable[int | None]]


class LineReader:
    """Splits a byte stream into lines, skipping (not buffering) oversized ones.

    A line is held to ``max_line`` while it is read; past it, ``widen`` (if given)
    may allow that one line more, judged by its first bytes (a capture's page), so
    what a connection buffers is known before the bytes come, not after.

    A last line without its newline still counts once the client stops writing,
    so ``printf '{...}' | socat - UNIX-CONNECT:...`` gets its answer. With
    ``read_timeout_s``, a line must be whole that long after its first byte came
    (or after the previous line, if it had begun by then): a client that sends
    half a line and stalls, or trickles one in, cannot hold its connection open.
    """

    def __init__(
        self,
        stream: ByteReceiveStream,
        max_line: int = MAX_LINE,
        *,
        read_timeout_s: float | None = None,
        widen: Widen | None = None,
    ) -> None:
        self._stream = stream
        self._base = max_line
        self._max = max_line
        self._widen = widen
        self._read_timeout_s = read_timeout_s
        self._buf = bytearray()
        #: Bytes of ``_buf`` known to hold no newline: a line that trickles in is scanned once.
        self._scanned = 0
        self._skipping = False
        self._eof = False

    async def next_line(self) -> bytes | None:
        """The next line without its newline; None at end of stream.

        Raises :class:`LineTooLong` once per oversized line, after dropping it, and
        :class:`ReadTimedOut` when a begun line is not finished in time.
        """
        #: When this line's time runs out; set once its first byte is here.
        deadline = self._deadline() if self._buf or self._skipping else math.inf
        while True:
            idx = self._buf.find(b"\n", self._scanned)
            if idx > self._max and not self._skipping:
                await self._widen_to_fit(deadline)
            if idx >= 0:
                line = bytes(self._buf[:idx])
                if len(self._buf) > self._base:
                    # A long line's room is given back, not kept for the next line.
                    self._buf = bytearray(memoryview(self._buf)[idx + 1 :])
                else:
                    del self._buf[: idx + 1]
                self._scanned = 0
                return self._checked(line)
            self._scanned = len(self._buf)
            if len(self._buf) > self._max:
                await self._widen_to_fit(deadline)
            if len(self._buf) > self._max:
                self._buf = bytearray()
                self._scanned = 0
                self._skipping = True
            if self._eof:
                if not self._buf and not self._skipping:
                    return None
                line = bytes(self._buf)
                self._buf.clear()
                self._scanned = 0
                return self._checked(line)
            try:
                if math.isinf(deadline):
                    # Between lines: no clock to run (the connection's idle timeout applies).
                    data = await self._stream.receive()
                else:
                    with anyio.CancelScope(deadline=deadline) as scope:
                        data = await self._stream.receive()
                    if scope.cancelled_caught:
                        raise ReadTimedOut
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._eof = True
                continue
            if math.isinf(deadline):
                deadline = self._deadline()
            self._buf.extend(data)

    async def _widen_to_fit(self, deadline: float = math.inf) -> None:
        """Ask :attr:`_widen` (once per line, within its deadline) for more room for the
        line begun in the buffer."""
        if self._widen is None or self._max != self._base:
            return
        head = bytes(self._buf[:OPENING_BYTES])
        wider: int | None = None
        with anyio.CancelScope(deadline=deadline) as scope:
            wider = await self._widen(head)
        if scope.cancelled_caught:
            raise ReadTimedOut
        if wider is not None and wider > self._max:
            self._max = wider

    def _deadline(self) -> float:
        if self._read_timeout_s is None:
            return math.inf
        return anyio.current_time() + self._read_timeout_s

    def _checked(self, line: bytes) -> bytes:
        limit, self._max = self._max, self._base
        if self._skipping:
            self._skipping = False
            raise LineTooLong(limit)
        if len(line) > limit:
            raise LineTooLong(limit)
        return line
