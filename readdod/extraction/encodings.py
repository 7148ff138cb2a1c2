"""A response body, decompressed with every step's output bounded.

``Content-Encoding`` is undone here rather than by httpx so that a small gzip
or brotli bomb hits ``fetch.max_bytes`` on decompressed bytes without ever
inflating in memory: each decoder is given the bytes still allowed and stops
one past them.
"""

from __future__ import annotations

import zlib
from typing import Protocol

import brotli
import httpx

from readdod.errors import ErrorCode, ExtractionError

__all__ = ["Decoder", "Overflow", "decoder_for", "read_body"]


class Overflow(Exception):
    """More decompressed bytes than allowed."""


class _Damaged(Exception):
    """A body that does not decompress."""


class Decoder(Protocol):
    """One ``Content-Encoding`` undone, never giving more than ``budget`` bytes."""

    def decode(self, data: bytes, budget: int) -> bytes: ...

    def flush(self, budget: int) -> bytes: ...


class _Identity:
    def decode(self, data: bytes, budget: int) -> bytes:
        if len(data) > budget:
            raise Overflow
        return data

    def flush(self, budget: int) -> bytes:
        return b""


class _Zlib:
    """gzip (several members allowed) or deflate (zlib-wrapped or raw), never past ``budget``."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self._started = False

    def decode(self, data: bytes, budget: int) -> bytes:
        out = bytearray()
        while data:
            try:
                piece = self._obj.decompress(data, budget - len(out) + 1)
            except zlib.error as exc:
                if not self._gzip and not self._started:
                    self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise _Damaged(str(exc)) from exc
            self._started = True
            out += piece
            if len(out) > budget:
                raise Overflow
            if self._gzip and self._obj.eof and self._obj.unused_data:
                data = self._obj.unused_data
                self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16)
            else:
                data = b""
        return bytes(out)

    def flush(self, budget: int) -> bytes:
        out = self._obj.flush(budget + 1)
        if len(out) > budget:
            raise Overflow
        return out


class _Brotli:
    def __init__(self) -> None:
        self._obj = brotli.Decompressor()

    def decode(self, data: bytes, budget: int) -> bytes:
        try:
            out = bytearray(self._obj.process(data, output_buffer_limit=budget + 1))
            while len(out) <= budget and not self._obj.can_accept_more_data():
                piece = self._obj.process(b"", output_buffer_limit=budget - len(out) + 1)
                if not piece:
                    break
                out += piece
        except brotli.error as exc:
            raise _Damaged(str(exc)) from exc
        if len(out) > budget:
            raise Overflow
        return bytes(out)

    def flush(self, budget: int) -> bytes:
        return b""


class _Chain:
    def __init__(self, decoders: list[Decoder]) -> None:
        self._decoders = decoders

    def decode(self, data: bytes, budget: int) -> bytes:
        for decoder in self._decoders:
            data = decoder.decode(data, budget)
        return data

    def flush(self, budget: int) -> bytes:
        pending = b""
        for decoder in self._decoders:
            pending = decoder.decode(pending, budget) + decoder.flush(budget)
            if len(pending) > budget:
                raise Overflow
        return pending


def decoder_for(url: str, header: str | None) -> Decoder:
    """Decoders for ``Content-Encoding``, in the order to apply them (reverse of the header)."""
    decoders: list[Decoder] = []
    for raw in reversed((header or "").split(",")):
        name = raw.strip().lower()
        if name in ("", "identity"):
            continue
        if name in ("gzip", "x-gzip"):
            decoders.append(_Zlib(gzip=True))
        elif name == "deflate":
            decoders.append(_Zlib(gzip=False))
        elif name == "br":
            decoders.append(_Brotli())
        else:
            raise ExtractionError(
                f"The server sent {url} compressed as {name!r}, which readdod cannot read.",
                code=ErrorCode.EXTRACTION_FETCH_FAILED,
                retryable=False,
            )
    if not decoders:
        return _Identity()
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)


async def read_body(response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
    """The decompressed body, raising :class:`Overflow` past ``limit`` bytes.

    With ``truncate`` the body is cut at ``limit`` (or where it stops
    decompressing) instead: an error page is read only to recognise it.
    """
    decoder = decoder_for(str(response.url), response.headers.get("content-encoding"))
    body = bytearray()
    try:
        async for raw in response.aiter_raw():
            body += decoder.decode(raw, limit - len(body))
        body += decoder.flush(limit - len(body))
    except Overflow:
        if truncate:
            return bytes(body)
        raise
    except _Damaged as exc:
        if truncate:
            return bytes(body)
        raise ExtractionError(
            f"The server sent a damaged (badly compressed) response for {response.url}.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
            debug=str(exc),
        ) from exc
    return bytes(body)
