"""Fetching a page over HTTP, within limits, and handing it to the extractor.

Everything that can go wrong on the network becomes an :class:`ExtractionError`
with a stable code and an honest ``retryable`` flag, so the step can retry
what is temporary (:func:`extract_url`, through :mod:`readdod.retrying`) and
tell the user about the rest without anyone reading messages.

The limits, and why they are enforced here rather than left to httpx:

- Redirects are followed one hop at a time, so every hop passes the address
  guard (:mod:`readdod.extraction.guard`), the hop count can vary per call,
  and a redirect's body is never read.
- Bodies are decompressed here, with the output of every step bounded, so a
  small gzip or brotli bomb hits ``fetch.max_bytes`` on decompressed bytes
  without ever inflating in memory.
- Text is decoded here: BOM, then the header's charset, then ``<meta>`` or the
  XML declaration, then detection (charset-normalizer), with the WHATWG
  replacements browsers use (latin-1 means windows-1252, Shift_JIS means
  windows-31j, GB2312 means GB18030).
- Bot walls (Cloudflare and friends) are recognised and reported as
  ``EXTRACTION_BLOCKED_BY_SITE`` with the way around them (``--html``),
  instead of extracting the text of a challenge page.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import functools
import math
import re
import ssl
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import TracebackType
from typing import Final, Protocol

import anyio
import anyio.to_thread
import brotli
import charset_normalizer
import httpcore
import httpx
import msgspec

from readdod import retrying
from readdod.clock import SystemClock, iso
from readdod.config import FetchConfig
from readdod.errors import ConfigError, ErrorCode, ExtractionError
from readdod.extraction.extract import extract, extract_text
from readdod.extraction.guard import AddressGuard, GuardedBackend, Resolver
from readdod.models import Extraction
from readdod.retrying import OnRetry, RetryPolicy

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_USER_AGENT",
    "FetchClient",
    "FetchedPage",
    "decode_body",
    "extract_url",
    "fetch",
    "make_client",
    "retry_policy",
]

DEFAULT_USER_AGENT: Final = FetchConfig().user_agent
DEFAULT_MAX_BYTES: Final = FetchConfig().max_bytes

SUPPORTED_TYPES: Final = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
#: Types that say nothing about the content; the body is sniffed instead.
_VAGUE_TYPES: Final = frozenset(
    {"application/octet-stream", "binary/octet-stream", "application/unknown", "unknown/unknown"}
)
_XML_TYPES: Final = frozenset({"text/xml", "application/xml"})
_ACCEPT: Final = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.1"
_ACCEPT_ENCODING: Final = "gzip, deflate, br"
_SNIFF_BYTES: Final = 4096
_DETECT_BYTES: Final = 64 * 1024
#: How much of an error page is read to look for a bot wall.
_ERROR_BODY_BYTES: Final = 256 * 1024
#: A 2xx page with a challenge marker is a wall only if it has less visible text than this.
_TINY_TEXT_CHARS: Final = 1500

_META_CHARSET_RE: Final = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE
)
_XML_DECL_RE: Final = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")
_MARKUP_RE: Final = re.compile(
    rb"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>",
    re.IGNORECASE | re.DOTALL,
)
_TEXT_MARKUP_RE: Final = re.compile(
    r"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->|<[^>]*>",
    re.IGNORECASE | re.DOTALL,
)
_LOOKS_HTML_RE: Final = re.compile(
    rb"^\s*<|<(?:!doctype\s+html|html|head|body|p|div|title)\b", re.IGNORECASE
)
_BINARY_MAGIC: Final = (
    b"%PDF",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"\x00\x00\x00",
    b"OggS",
    b"ID3",
)

#: Label → codec where browsers (WHATWG Encoding) decode differently from the label.
_WHATWG: Final = {
    "ascii": "cp1252",
    "latin_1": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "shift_jis": "cp932",
    "euc_kr": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "big5": "big5hkscs",
}
_WESTERN: Final = frozenset({"cp1252", "latin_1", "iso8859_15"})
_ALIASES: Final = {
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "x-gbk": "gb18030",
    "x-euc-jp": "euc_jp",
    "ks_c_5601-1987": "cp949",
    "x-mac-roman": "mac_roman",
    "x-cp1251": "cp1251",
}

#: (vendor, markers); any marker (lower-case) in the page means that vendor's wall.
_WALL_MARKERS: Final = (
    (
        "Cloudflare",
        (
            "/cdn-cgi/challenge-platform/",
            "cf-chl-",
            "cf_chl_opt",
            "challenges.cloudflare.com",
            "<title>just a moment...</title>",
            "attention required! | cloudflare",
            "enable javascript and cookies to continue",
        ),
    ),
    ("DataDome", ("captcha-delivery.com", "please enable js and disable any ad blocker")),
    ("HUMAN (PerimeterX)", ("px-captcha", "_pxcaptcha", "perimeterx")),
    ("Imperva", ("_incapsula_resource", "incapsula incident id")),
    ("Akamai", ("errors.edgesuite.net",)),
    ("Sucuri", ("sucuri website firewall",)),
    ("AWS WAF", ("awswaf.com", "awswafintegration")),
    (
        "a bot check",
        (
            "g-recaptcha",
            "hcaptcha.com",
            "checking your browser before accessing",
            "verify you are a human",
            "verify you are human",
            "are you a robot",
            "ddos protection by",
        ),
    ),
)


class FetchedPage(msgspec.Struct, kw_only=True, frozen=True):
    """A fetched page, decoded to text; ``content_type`` is the bare media type."""

    url: str
    final_url: str
    status: int
    content_type: str
    html: str
    fetched_at: str


class FetchClient(httpx.AsyncClient):
    """The shared HTTP client, with the fetch policy and address guard it was made with."""

    def __init__(self, config: FetchConfig, guard: AddressGuard, transport: _Transport) -> None:
        super().__init__(
            headers={
                "User-Agent": config.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": _ACCEPT_ENCODING,
            },
            timeout=_timeouts(config, config.timeout_s),
            follow_redirects=False,
            transport=transport,
            trust_env=False,
            # Cookies live for one fetch (across its redirects), never between pages.
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
        )
        self.config = config
        self.guard = guard
        self.slots = transport.slots


def make_client(
    config: FetchConfig | None = None,
    *,
    resolver: Resolver | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> FetchClient:
    """A client meant to be shared by all fetches (it pools connections).

    The caller owns it and must close it (``async with`` or ``aclose()``).
    ``resolver`` replaces the system's DNS lookups (the guard uses it);
    ``ssl_context`` replaces the default certificate checks (a private CA).
    """
    cfg = config or FetchConfig()
    try:
        guard = AddressGuard(
            allow_private=cfg.allow_private, allow_networks=cfg.allow_networks, resolver=resolver
        )
    except ValueError as exc:
        raise ConfigError(f"fetch.allow_networks: {exc}") from exc
    return FetchClient(cfg, guard, _Transport(cfg, guard, ssl_context))


def retry_policy(config: FetchConfig) -> RetryPolicy:
    """How a fetch retries temporary failures, from ``[fetch]``."""
    return RetryPolicy(
        attempts=config.attempts,
        initial_s=config.retry_initial_s,
        max_s=config.retry_max_s,
        jitter_s=config.retry_initial_s,
        max_retry_after_s=config.retry_max_s,
    )


async def fetch(
    url: str,
    *,
    client: FetchClient,
    max_bytes: int | None = None,
    max_redirects: int | None = None,
    timeout_s: float | None = None,
) -> FetchedPage:
    """GET ``url`` once and return its decoded body (limits default to the client's).

    ``timeout_s`` is a deadline for the whole fetch, so a server dripping one
    byte a second cannot hold a worker; connect and read timeouts bound each
    network operation inside it. Time spent queued for one of the host's
    ``fetch.per_host_limit`` slots is not counted: it is readdod's own queue,
    not the server being slow.
    """
    cfg = client.config
    limit = max_bytes if max_bytes is not None else cfg.max_bytes
    hops = max_redirects if max_redirects is not None else cfg.max_redirects
    deadline = timeout_s if timeout_s is not None else cfg.timeout_s
    try:
        with anyio.fail_after(deadline) as scope:
            token = _DEADLINE.set(scope)
            try:
                return await _fetch(url, client, limit, hops, _timeouts(cfg, deadline))
            finally:
                _DEADLINE.reset(token)
    except TimeoutError as exc:
        raise ExtractionError(
            f"Fetching {url} took longer than {deadline:g} seconds (fetch.timeout_s);"
            " the server is too slow or sends the page too slowly.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            timed_out=True,
        ) from exc
    except httpx.ConnectTimeout as exc:
        raise ExtractionError(
            f"Could not connect to the server for {url} within"
            f" {min(cfg.connect_timeout_s, deadline):g} seconds; try again later.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            timed_out=True,
            debug=repr(exc),
        ) from exc
    except httpx.TimeoutException as exc:
        raise ExtractionError(
            f"The server for {url} stopped answering for"
            f" {min(cfg.read_timeout_s, deadline):g} seconds (fetch.read_timeout_s);"
            " try again later.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            timed_out=True,
            debug=repr(exc),
        ) from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise ExtractionError(
            f"{url} is not a web address that can be fetched: {exc}",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
            debug=repr(exc),
        ) from exc
    except httpx.ConnectError as exc:
        if _caused_by(exc, ssl.SSLCertVerificationError):
            raise ExtractionError(
                f"The site {url} did not prove who it is: its TLS certificate is not valid"
                f" ({exc}). readdod does not read pages over a connection it cannot trust.",
                code=ErrorCode.EXTRACTION_FETCH_FAILED,
                retryable=False,
                debug=repr(exc),
            ) from exc
        raise ExtractionError(
            f"Could not connect to the server for {url} ({exc}); check the address,"
            " or try again later if the site is down.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            debug=repr(exc),
        ) from exc
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise ExtractionError(
            f"The connection to the server for {url} broke off ({str(exc) or type(exc).__name__});"
            " try again later.",
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
    client: FetchClient,
    max_bytes: int | None = None,
    max_redirects: int | None = None,
    timeout_s: float | None = None,
    retry: RetryPolicy | None = None,
    on_retry: OnRetry | None = None,
) -> Extraction:
    """Fetch ``url`` (retrying what is temporary) and extract its article.

    ``retry`` defaults to the client's ``[fetch]`` policy; ``on_retry`` is
    told before each wait, so the step shows as ``retrying``. Parsing a large
    page is CPU work, so it runs in a worker thread to keep the event loop
    (heartbeats, the control socket) responsive.
    """

    async def attempt() -> FetchedPage:
        return await fetch(
            url,
            client=client,
            max_bytes=max_bytes,
            max_redirects=max_redirects,
            timeout_s=timeout_s,
        )

    page = await retrying.call(attempt, retry or retry_policy(client.config), on_retry)
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


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# --- the transport: address guard and per-host slots ---------------------------


def _timeouts(cfg: FetchConfig, deadline: float) -> httpx.Timeout:
    read = min(cfg.read_timeout_s, deadline)
    return httpx.Timeout(
        connect=min(cfg.connect_timeout_s, deadline), read=read, write=read, pool=deadline
    )


#: The running fetch's whole-fetch deadline, paused while it queues for a host slot.
_DEADLINE: contextvars.ContextVar[anyio.CancelScope | None] = contextvars.ContextVar(
    "readdod_fetch_deadline", default=None
)


@dataclass
class _Slot:
    limiter: anyio.CapacityLimiter
    users: int = 0


class _HostSlots:
    """At most ``limit`` requests in flight per host; a slot is held until the body is closed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots: dict[str, _Slot] = {}

    async def acquire(self, host: str) -> Callable[[], None]:
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
    """Raise httpcore's errors as the httpx errors :func:`fetch` tells apart."""
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


class _Transport(httpx.AsyncBaseTransport):
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
        self.slots = _HostSlots(cfg.per_host_limit)

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

    async def __aenter__(self) -> _Transport:
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


# --- one fetch ------------------------------------------------------------------


async def _fetch(
    url: str, client: FetchClient, max_bytes: int, max_redirects: int, timeouts: httpx.Timeout
) -> FetchedPage:
    _check_scheme(url, url)
    request = client.build_request("GET", url, timeout=timeouts)
    jar = httpx.Cookies()
    hops = 0
    while True:
        await client.guard.check_host(request.url.host, _port(request.url))
        jar.set_cookie_header(request)
        response = await client.send(request, stream=True, follow_redirects=False)
        try:
            jar.extract_cookies(response)
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


def _port(u: httpx.URL) -> int:
    return u.port or (443 if u.scheme == "https" else 80)


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
    media_type, charset = _parse_content_type(response.headers.get("content-type"))
    if status >= 400:
        raise await _http_error(url, response, charset)
    if not 200 <= status < 300:
        raise ExtractionError(
            f"The server answered HTTP {status} for {url}, which is not a page.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )
    if (
        media_type is not None
        and media_type not in SUPPORTED_TYPES
        and media_type not in _VAGUE_TYPES
        and media_type not in _XML_TYPES
    ):
        raise _unsupported(url, media_type)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(url, max_bytes)
    try:
        data = await _read_body(response, max_bytes)
    except _Overflow:
        raise _too_large(url, max_bytes) from None
    media_type = _sniff(url, media_type, data)
    text = await anyio.to_thread.run_sync(decode_body, data, charset)
    if len(data) <= _ERROR_BODY_BYTES:
        vendor = _wall_vendor(response.headers, text, tiny_only=True)
        if vendor is not None:
            raise _blocked_by_site(url, vendor, status)
    return FetchedPage(
        url=url,
        final_url=str(response.url),
        status=status,
        content_type=media_type,
        html=text,
        fetched_at=iso(SystemClock().now_ms()) or "",
    )


def _sniff(url: str, media_type: str | None, data: bytes) -> str:
    """The type to read ``data`` as, checking the declared type against the bytes."""
    head = data[:1024]
    binary = head.startswith(_BINARY_MAGIC) or b"\x00" in head
    if binary and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        if media_type is None or media_type in _VAGUE_TYPES:
            raise _unsupported(url, "binary data" if media_type is None else media_type)
        raise ExtractionError(
            f"{url} says it is {media_type} but sent binary data; readdod reads HTML and"
            " plain text only.",
            code=ErrorCode.EXTRACTION_UNSUPPORTED_TYPE,
            retryable=False,
        )
    if media_type in SUPPORTED_TYPES:
        assert media_type is not None
        return media_type
    looks_html = _LOOKS_HTML_RE.search(data[:_SNIFF_BYTES]) is not None
    if media_type in _XML_TYPES:
        if re.search(rb"<html\b", data[:_SNIFF_BYTES], re.IGNORECASE):
            return "application/xhtml+xml"
        raise _unsupported(url, media_type)
    return "text/html" if looks_html else "text/plain"


# --- errors with a status ----------------------------------------------------------


async def _http_error(url: str, response: httpx.Response, charset: str | None) -> ExtractionError:
    status = response.status_code
    text = ""
    if status in (403, 429, 503) or _wall_header(response.headers):
        try:
            body = await _read_body(response, _ERROR_BODY_BYTES, truncate=True)
        except (httpx.HTTPError, ExtractionError):
            body = b""
        text = decode_body(body, charset)
    vendor = _wall_vendor(response.headers, text, tiny_only=False) if text else None
    if vendor is None:
        vendor = _wall_header(response.headers)
    if vendor is not None:
        return _blocked_by_site(url, vendor, status)
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    said = f"The server answered HTTP {status}{reason} for {url}"
    retry_after = retrying.retry_after_s(response.headers)
    if status in (404, 410):
        return ExtractionError(
            f"{said}: the page does not exist (any more). Check the address.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )
    if status == 429:
        return ExtractionError(
            f"{said}: the site is limiting how often readdod may ask; try again later.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            retry_after=retry_after,
        )
    if status >= 500 or status in (408, 425):
        return ExtractionError(
            f"{said}: the site has a problem right now; try again later.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=True,
            retry_after=retry_after,
        )
    if status in (401, 403, 451):
        return ExtractionError(
            f"{said}: the site refuses to give readdod this page. If it opens in your"
            " browser, save it and capture it with `readdod capture URL --html FILE`.",
            code=ErrorCode.EXTRACTION_FETCH_FAILED,
            retryable=False,
        )
    return ExtractionError(
        f"{said}.",
        code=ErrorCode.EXTRACTION_FETCH_FAILED,
        retryable=False,
    )


def _wall_header(headers: httpx.Headers) -> str | None:
    """The vendor whose bot wall the headers announce, if any."""
    if headers.get("cf-mitigated", "").lower() == "challenge":
        return "Cloudflare"
    if headers.get("x-amzn-waf-action", "").lower() in ("captcha", "challenge"):
        return "AWS WAF"
    if "x-datadome" in headers and headers.get("x-dd-b") is not None:
        return "DataDome"
    return None


def _wall_vendor(headers: httpx.Headers, text: str, *, tiny_only: bool) -> str | None:
    """The vendor of the challenge in ``text``, if it is a challenge page.

    On a 2xx answer (``tiny_only``) markers count only on a page with almost
    no visible text: an article about Cloudflare is not a Cloudflare wall.
    """
    vendor = _wall_header(headers)
    if vendor is None:
        low = text[:_ERROR_BODY_BYTES].lower()
        vendor = next(
            (name for name, markers in _WALL_MARKERS if any(m in low for m in markers)), None
        )
    if vendor is None:
        return None
    if tiny_only:
        visible = " ".join(_TEXT_MARKUP_RE.sub(" ", text[:_ERROR_BODY_BYTES]).split())
        if len(visible) >= _TINY_TEXT_CHARS:
            return None
    return vendor


def _blocked_by_site(url: str, vendor: str, status: int) -> ExtractionError:
    who = vendor if vendor == "a bot check" else f"{vendor}'s bot check"
    return ExtractionError(
        f"{url} answered with {who} (HTTP {status}) instead of the page; readdod cannot"
        " pass it. Open the page in your browser, save it, and capture it with"
        " `readdod capture URL --html FILE`.",
        code=ErrorCode.EXTRACTION_BLOCKED_BY_SITE,
        retryable=False,
    )


def _unsupported(url: str, media_type: str) -> ExtractionError:
    return ExtractionError(
        f"{url} is {media_type}, not a web page; readdod reads HTML and plain text only. "
        "Capture the text with --text instead.",
        code=ErrorCode.EXTRACTION_UNSUPPORTED_TYPE,
        retryable=False,
    )


def _too_large(url: str, max_bytes: int) -> ExtractionError:
    return ExtractionError(
        f"{url} is larger than the {max_bytes:,} byte limit (fetch.max_bytes). Raise the"
        " limit, or save the page and capture it with `readdod capture URL --html FILE`.",
        code=ErrorCode.EXTRACTION_TOO_LARGE,
        retryable=False,
    )


# --- the body: bounded decompression -------------------------------------------------


class _Overflow(Exception):
    """More decompressed bytes than allowed."""


class _Damaged(Exception):
    """A body that does not decompress."""


class _Decoder(Protocol):
    def decode(self, data: bytes, budget: int) -> bytes: ...

    def flush(self, budget: int) -> bytes: ...


class _Identity:
    def decode(self, data: bytes, budget: int) -> bytes:
        if len(data) > budget:
            raise _Overflow
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
                raise _Overflow
            if self._gzip and self._obj.eof and self._obj.unused_data:
                data = self._obj.unused_data
                self._obj = zlib.decompressobj(zlib.MAX_WBITS | 16)
            else:
                data = b""
        return bytes(out)

    def flush(self, budget: int) -> bytes:
        out = self._obj.flush(budget + 1)
        if len(out) > budget:
            raise _Overflow
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
            raise _Overflow
        return bytes(out)

    def flush(self, budget: int) -> bytes:
        return b""


class _Chain:
    def __init__(self, decoders: list[_Decoder]) -> None:
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
                raise _Overflow
        return pending


def _decoder_for(url: str, header: str | None) -> _Decoder:
    """Decoders for ``Content-Encoding``, in the order to apply them (reverse of the header)."""
    decoders: list[_Decoder] = []
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


async def _read_body(response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
    """The decompressed body, raising ``_Overflow`` past ``limit`` bytes (or cutting it there)."""
    decoder = _decoder_for(str(response.url), response.headers.get("content-encoding"))
    body = bytearray()
    try:
        async for raw in response.aiter_raw():
            body += decoder.decode(raw, limit - len(body))
        body += decoder.flush(limit - len(body))
    except _Overflow:
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


# --- text: charsets -------------------------------------------------------------------


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
    """Bytes to text: BOM, header charset, ``<meta>``/XML declaration, then detection.

    Invalid bytes become U+FFFD instead of failing: a page with one bad byte
    is still worth reading.
    """
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    encoding = _codec(charset) or _declared_in_page(data) or _detect(data)
    return data.decode(encoding, errors="replace")


def _declared_in_page(data: bytes) -> str | None:
    head = data[:_SNIFF_BYTES]
    match = _XML_DECL_RE.match(head) or _META_CHARSET_RE.search(head)
    return _codec(match.group(1).decode("ascii", "replace")) if match else None


def _detect(data: bytes) -> str:
    """The encoding of unlabelled bytes: UTF-8 if they are valid UTF-8, else a guess."""
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    # Markup is ASCII in every encoding; the guess is better made on the text alone.
    sample = _MARKUP_RE.sub(b" ", data[: 4 * _DETECT_BYTES])[:_DETECT_BYTES]
    matches = charset_normalizer.from_bytes(sample or data[:_DETECT_BYTES])
    best = matches.best()
    # Without a BOM, a guess of UTF-16/32 on a few bytes is noise; browsers fall back to 1252.
    if best is None or best.encoding.startswith(("utf_16", "utf_32")):
        return "cp1252"
    # Western pages often fit several Latin code pages equally well; windows-1252 is the
    # one the web actually uses, so it wins every tie.
    for match in matches:
        if (
            match.encoding in _WESTERN
            and match.chaos <= best.chaos
            and match.coherence >= best.coherence
        ):
            return "cp1252"
    return _codec(best.encoding) or "cp1252"


def _codec(label: str | None) -> str | None:
    """Python's codec for a charset label (as browsers read it), or None if unknown."""
    if not label:
        return None
    label = label.strip().lower()
    label = _ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    # A UTF-16 label on a page without a BOM is nearly always a mislabelled UTF-8 page.
    if name.startswith("utf-16"):
        return "utf-8"
    if name in ("utf-7", "utf_7"):
        return None
    return _WHATWG.get(name, name)
