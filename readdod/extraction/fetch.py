"""Fetching a page over HTTP, within limits, and handing it to the extractor.

Everything that can go wrong on the network becomes an :class:`ExtractionError`
with a stable code and an honest ``retryable`` flag, so the orchestrator can
decide between "try again later" and "tell the user" without reading messages.

Redirects are followed here, one hop at a time, rather than by httpx: that
bounds the hops per call (a shared client's ``max_redirects`` cannot vary per
call), never reads a redirect's body, and gives the later address guard a
place to check every hop.
"""

from __future__ import annotations

import codecs
import datetime as dt
import functools
import re
from typing import Final

import anyio
import anyio.to_thread
import httpx
import msgspec

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.extract import extract, extract_text
from readdod.models import Extraction

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_USER_AGENT",
    "FetchedPage",
    "extract_url",
    "fetch",
    "make_client",
]

DEFAULT_USER_AGENT: Final = "readdod/0.1 (+https://github.com/readdod)"
DEFAULT_MAX_BYTES: Final = 10 * 1024 * 1024
DEFAULT_MAX_REDIRECTS: Final = 5
DEFAULT_TIMEOUT_S: Final = 30.0

SUPPORTED_TYPES: Final = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_ACCEPT: Final = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.1"
_SNIFF_BYTES: Final = 2048
_META_CHARSET_RE: Final = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)


class FetchedPage(msgspec.Struct, kw_only=True, frozen=True):
    """A fetched page, decoded to text; ``content_type`` is the bare media type."""

    url: str
    final_url: str
    status: int
    content_type: str
    html: str
    fetched_at: str


def make_client(
    *,
    user_agent: str = DEFAULT_USER_AGENT,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
) -> httpx.AsyncClient:
    """A client meant to be shared by all fetches (it pools connections).

    The caller owns it and must close it (``async with`` or ``aclose()``).
    """
    return httpx.AsyncClient(
        headers={"User-Agent": user_agent, "Accept": _ACCEPT},
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=True,
        max_redirects=max_redirects,
    )


async def fetch(
    url: str,
    *,
    client: httpx.AsyncClient,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> FetchedPage:
    """GET ``url`` and return its decoded body.

    ``timeout_s`` bounds each network operation and, as a deadline, the whole
    fetch (so a server dripping one byte a second cannot hold a worker).
    """
    try:
        with anyio.fail_after(timeout_s):
            return await _fetch(url, client, max_bytes, max_redirects, timeout_s)
    except TimeoutError as exc:
        raise ExtractionError(
            f"Fetching {url} took longer than {timeout_s:g} seconds.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
        ) from exc
    except httpx.TimeoutException as exc:
        raise ExtractionError(
            f"The server for {url} did not answer within {timeout_s:g} seconds.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            debug=repr(exc),
        ) from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ExtractionError(
            f"{url} is not a web address that can be fetched: {exc}",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
            debug=repr(exc),
        ) from exc
    except httpx.DecodingError as exc:
        raise ExtractionError(
            f"The server sent a damaged (badly compressed) response for {url}.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
            debug=repr(exc),
        ) from exc
    except httpx.ConnectError as exc:
        raise ExtractionError(
            f"Could not connect to the server for {url} ({exc}); check the address,"
            " or try again later if the site is down.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            debug=repr(exc),
        ) from exc
    except httpx.HTTPError as exc:
        raise ExtractionError(
            f"Could not fetch {url}: {type(exc).__name__} {exc}".rstrip(),
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            debug=repr(exc),
        ) from exc


async def extract_url(
    url: str,
    *,
    client: httpx.AsyncClient,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Extraction:
    """Fetch ``url`` and extract its article (``source="fetched"``).

    Parsing a large page is CPU work, so it runs in a worker thread to keep
    the event loop (heartbeats, the control socket) responsive.
    """
    page = await fetch(
        url, client=client, max_bytes=max_bytes, max_redirects=max_redirects, timeout_s=timeout_s
    )
    if page.content_type == "text/plain":
        plain = await anyio.to_thread.run_sync(
            functools.partial(extract_text, page.html, url=page.url)
        )
        return msgspec.structs.replace(
            plain,
            source="fetched",
            final_url=page.final_url,
            http_status=page.status,
            content_type=page.content_type,
            fetched_at=page.fetched_at,
        )
    return await anyio.to_thread.run_sync(
        functools.partial(
            extract,
            page.html,
            page.url,
            source="fetched",
            http_status=page.status,
            content_type=page.content_type,
            final_url=page.final_url,
            fetched_at=page.fetched_at,
        )
    )


# --- internals ---------------------------------------------------------------


async def _fetch(
    url: str, client: httpx.AsyncClient, max_bytes: int, max_redirects: int, timeout_s: float
) -> FetchedPage:
    _check_scheme(url, url)
    request = client.build_request("GET", url, timeout=timeout_s)
    hops = 0
    while True:
        response = await client.send(request, stream=True, follow_redirects=False)
        try:
            if response.next_request is not None:
                hops += 1
                if hops > max_redirects:
                    raise ExtractionError(
                        f"{url} redirected more than {max_redirects} times "
                        "(possibly a redirect loop); gave up.",
                        code=ErrorCode.EXTRACTION_FETCH_FAILED,
                        retryable=False,
                        debug=f"last hop: {response.url} -> {response.next_request.url}",
                    )
                request = response.next_request
                _check_scheme(url, str(request.url))
                continue
            return await _read_page(url, response, max_bytes)
        finally:
            await response.aclose()


def _check_scheme(url: str, target: str) -> None:
    scheme = target.split(":", 1)[0].lower() if ":" in target else ""
    if scheme not in ("http", "https"):
        raise ExtractionError(
            f"{url} leads to {target!r}, which is not an http(s) address.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )


async def _read_page(url: str, response: httpx.Response, max_bytes: int) -> FetchedPage:
    status = response.status_code
    if status >= 400:
        reason = f" {response.reason_phrase}" if response.reason_phrase else ""
        raise ExtractionError(
            f"The server answered HTTP {status}{reason} for {url}.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=_retryable_status(status),
        )
    if not 200 <= status < 300:
        raise ExtractionError(
            f"The server answered HTTP {status} for {url}, which is not a page.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )
    media_type, charset = _parse_content_type(response.headers.get("content-type"))
    if media_type is not None and media_type not in SUPPORTED_TYPES:
        raise _unsupported(url, media_type)

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(url, max_bytes)
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise _too_large(url, max_bytes)

    data = bytes(body)
    if media_type is None:
        # No declared type: accept it as HTML unless it is plainly binary.
        if data.startswith(b"%PDF") or b"\x00" in data[:1024]:
            raise _unsupported(url, "binary data")
        media_type = "text/html"
    return FetchedPage(
        url=url,
        final_url=str(response.url),
        status=status,
        content_type=media_type,
        html=decode_body(data, charset),
        fetched_at=_now_rfc3339(),
    )


def _retryable_status(status: int) -> bool:
    """Statuses that usually mean "not now" rather than "never"."""
    return status in (408, 425, 429) or status >= 500


def _parse_content_type(header: str | None) -> tuple[str | None, str | None]:
    """The bare media type and the charset parameter of a Content-Type header."""
    if not header or not header.strip():
        return None, None
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media_type.strip().lower() or None, charset


def decode_body(data: bytes, charset: str | None) -> str:
    """Bytes to text: BOM, then the header's charset, then <meta charset>, then UTF-8.

    Invalid bytes become U+FFFD instead of failing: a page with one bad byte
    is still worth reading.
    """
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", errors="replace")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    encoding = _codec(charset)
    if encoding is None:
        match = _META_CHARSET_RE.search(data[:_SNIFF_BYTES])
        encoding = _codec(match.group(1).decode("ascii", "replace")) if match else None
    return data.decode(encoding or "utf-8", errors="replace")


def _codec(label: str | None) -> str | None:
    """Python's codec for a charset label, or None if unknown.

    As browsers do, latin-1 and ascii labels decode as windows-1252, which
    pages labelled that way almost always really are.
    """
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip()).name
    except LookupError:
        return None
    if name in ("iso8859-1", "latin-1", "ascii"):
        return "cp1252"
    # A UTF-16 label on a page without a BOM is nearly always a mislabelled UTF-8 page.
    if name.startswith("utf-16"):
        return "utf-8"
    return name


def _unsupported(url: str, media_type: str) -> ExtractionError:
    return ExtractionError(
        f"{url} is {media_type}, not a web page; readdod reads HTML and plain text only. "
        "Capture the text with --text instead.",
        code=ErrorCode.EXTRACTION_UNSUPPORTED_TYPE,
        retryable=False,
    )


def _too_large(url: str, max_bytes: int) -> ExtractionError:
    return ExtractionError(
        f"{url} is larger than the {max_bytes:,} byte limit (fetch.max_bytes).",
        code=ErrorCode.EXTRACTION_TOO_LARGE,
        retryable=False,
    )


def _now_rfc3339() -> str:
    stamp = dt.datetime.now(dt.UTC)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")
