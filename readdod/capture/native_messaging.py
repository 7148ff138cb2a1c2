"""The native-messaging framing browsers speak to a host, and the host's message shapes.

Chrome, Chromium and Firefox start the host and talk on its stdin and stdout:
each message is a 32-bit length in the machine's byte order, then that many
bytes of UTF-8 JSON. A browser takes at most :data:`TO_BROWSER_MAX` bytes in one
message from a host; what a browser may send is bounded here by the host's own
limit. A request is ``{"method": ..., "params": {...}, "id"?: ...}``; its answer
is ``{"id": ..., "result": ...}`` or ``{"id": ..., "error": {...}}``, one answer per
message, in order. Pure: reading goes through any object with ``read(n)``.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Final, Protocol

import msgspec

from readdod.errors import ErrorCode, is_retryable

#: Length prefix: unsigned 32 bits, native byte order (what the browsers write and read).
HEADER: Final = struct.Struct("=I")
#: The largest message a browser accepts from a native host (Chrome and Firefox: 1 MB).
TO_BROWSER_MAX: Final = 1024 * 1024
#: The methods the host forwards to the daemon: what an extension needs, nothing that
#: changes or removes an item.
METHODS: Final = ("capture", "get", "list")
#: A skipped message is read and dropped in pieces of this size, never held whole.
SKIP_CHUNK: Final = 64 * 1024

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
TOO_LARGE: Final = 413
UNAVAILABLE: Final = 503

Id = int | str | None

_enc = msgspec.json.Encoder()


class ByteSource(Protocol):
    def read(self, n: int, /) -> bytes: ...


class FrameTooLarge(Exception):
    """A message longer than the reader's limit; its bytes have been skipped."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"message of {length} bytes, limit {limit}")
        self.length = length
        self.limit = limit


class FrameTruncated(Exception):
    """The stream ended inside a message: nothing more can be read."""

    def __init__(self, got: int, wanted: int) -> None:
        super().__init__(f"stream ended after {got} of {wanted} bytes")
        self.got = got
        self.wanted = wanted


class BadRequest(Exception):
    """A message that is not a request the host serves; :attr:`answer` says why."""

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer["error"]["message"])
        self.answer = answer


class HostRequest(msgspec.Struct, frozen=True):
    method: str
    params: dict[str, Any]
    id: Id = None


def encode(message: Any) -> bytes:
    """One framed message (header and JSON), whatever its size."""
    body = _enc.encode(message)
    return HEADER.pack(len(body)) + body


def _read_exactly(source: ByteSource, n: int, *, wanted: int, got: int = 0) -> bytes:
    parts: list[bytes] = []
    left = n
    while left:
        chunk = source.read(left)
        if not chunk:
            raise FrameTruncated(got + n - left, wanted)
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


class FrameReader:
    """Messages from a byte stream, each at most ``max_length`` bytes of JSON."""

    def __init__(self, source: ByteSource, max_length: int) -> None:
        self._source = source
        self.max_length = max_length

    def next_frame(self) -> bytes | None:
        """The next message's JSON bytes; None when the stream ends between messages.

        Raises :class:`FrameTooLarge` after skipping an oversized message (the next
        one can still be read), and :class:`FrameTruncated` when the stream ends
        inside a header or a message.
        """
        first = self._source.read(HEADER.size)
        if not first:
            return None
        header = first
        if len(header) < HEADER.size:
            rest = _read_exactly(
                self._source, HEADER.size - len(header), wanted=HEADER.size, got=len(header)
            )
            header += rest
        (length,) = HEADER.unpack(header)
        if length > self.max_length:
            skipped = 0
            while skipped < length:
                piece = _read_exactly(
                    self._source, min(SKIP_CHUNK, length - skipped), wanted=length, got=skipped
                )
                skipped += len(piece)
            raise FrameTooLarge(length, self.max_length)
        return _read_exactly(self._source, length, wanted=length)


def error_answer(
    req_id: Id,
    code: int,
    message: str,
    error_code: ErrorCode,
    *,
    retryable: bool | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An error answer in the daemon's shape: ``data.error_code`` says what happened."""
    data = {
        "error_code": error_code.value,
        "retryable": is_retryable(error_code, False) if retryable is None else retryable,
        **extra,
    }
    return {"id": req_id, "error": {"code": code, "message": message, "data": data}}


def invalid(req_id: Id, code: int, message: str) -> BadRequest:
    return BadRequest(error_answer(req_id, code, message, ErrorCode.VALIDATION_ERROR))


def _whole(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _scrubbed(doc: Any) -> Any:
    if isinstance(doc, str):
        return _whole(doc)
    if isinstance(doc, list):
        return [_scrubbed(v) for v in doc]
    if isinstance(doc, dict):
        return {_whole(k): _scrubbed(v) for k, v in doc.items()}
    return doc


def _lenient(frame: bytes, exc: Exception) -> Any:
    """A message msgspec refused, read again by the standard library's parser.

    Firefox writes a lone surrogate in a page's text (broken pages have them)
    as the escape ``\\ud800``, which is valid JSON that msgspec refuses; such a
    page is kept, each lone surrogate becoming U+FFFD. Anything else that is
    not JSON is an error.
    """
    try:
        doc = json.loads(frame)
    except (ValueError, RecursionError):
        raise invalid(None, PARSE_ERROR, f"the message is not JSON ({exc})") from None
    return _scrubbed(doc)


def parse_request(frame: bytes) -> HostRequest:
    """A message turned into a request the host forwards; :class:`BadRequest` otherwise."""
    try:
        doc = msgspec.json.decode(frame)
    except (msgspec.DecodeError, ValueError, RecursionError) as exc:
        # ValueError: msgspec raises UnicodeDecodeError for bad UTF-8 inside a string.
        doc = _lenient(frame, exc)
    if not isinstance(doc, dict):
        raise invalid(
            None,
            INVALID_REQUEST,
            f"a message must be a JSON object, not {type(doc).__name__}:"
            ' {"method": ..., "params": {...}, "id": ...}',
        )
    raw_id = doc.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, int | str)):
        raise invalid(None, INVALID_REQUEST, "id must be a number or a string")
    req_id: Id = raw_id
    unknown = sorted(set(doc) - {"method", "params", "id"})
    if unknown:
        raise invalid(
            req_id,
            INVALID_REQUEST,
            f"unknown member(s) {', '.join(map(repr, unknown))}; a message has method,"
            " params and id",
        )
    method = doc.get("method")
    if not isinstance(method, str):
        raise invalid(req_id, INVALID_REQUEST, "method must be a string")
    if method not in METHODS:
        raise invalid(
            req_id,
            METHOD_NOT_FOUND,
            f"unknown method {method!r}; the browser host forwards {', '.join(METHODS)}",
        )
    params = doc.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise invalid(req_id, INVALID_REQUEST, "params must be an object (named parameters)")
    return HostRequest(method=method, params=params, id=req_id)


def result_answer(req_id: Id, result: Any) -> dict[str, Any]:
    return {"id": req_id, "result": result}


def bounded(answer: dict[str, Any], limit: int = TO_BROWSER_MAX) -> bytes:
    """``answer`` framed, or a framed error in its place when a browser would refuse it."""
    framed = encode(answer)
    if len(framed) - HEADER.size <= limit:
        return framed
    why = (
        f"the answer is {len(framed) - HEADER.size} bytes; a browser takes at most {limit}"
        " from a native host. Ask for less (a smaller list limit), or read it with"
        " `readdod show`"
    )
    return encode(
        error_answer(
            answer.get("id"), TOO_LARGE, why, ErrorCode.PAYLOAD_TOO_LARGE, status=TOO_LARGE
        )
    )
