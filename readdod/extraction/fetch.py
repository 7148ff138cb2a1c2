"""Fetching a page over HTTP, within limits, and handing it to the extractor.

Everything that can go wrong on the network becomes an :class:`ExtractionError`
with a stable code and an honest ``retryable`` flag, so the step can retry
what is temporary (:func:`extract_url`, through :mod:`readdod.runtime.retrying`) and
tell the user about the rest without anyone reading messages.

The limits, and why they are enforced by readdod rather than left to httpx:

- Redirects are followed one hop at a time (here), so every hop passes the
  address guard (:mod:`readdod.extraction.guard`), the hop count can vary per
  call, and a redirect's body is never read.
- Connections come from readdod's own transport
  (:mod:`readdod.extraction.transport`): the guarded network backend, at most
  ``fetch.per_host_limit`` requests per host, and a whole-fetch deadline that
  does not count the time queued for a host.
- Bodies are decompressed with the output of every step bounded
  (:mod:`readdod.extraction.encodings`), so a small gzip or brotli bomb hits
  ``fetch.max_bytes`` on decompressed bytes without ever inflating in memory.
- What the body is comes from the declared type checked against the bytes
  (:mod:`readdod.extraction.mediatypes`); text is decoded the way browsers do
  (:mod:`readdod.extraction.charsets`).
- Error answers and bot walls become the refusals of
  :mod:`readdod.extraction.refusals`, instead of extracting the text of a
  challenge page.
"""

from __future__ import annotations

import functools
import re
import ssl
from collections.abc import Awaitable, Callable
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Final, TypeVar

import anyio
import anyio.to_thread
import httpx
import msgspec

from readdod.errors import ConfigError, ErrorCode, ExtractionError
from readdod.extraction import mediatypes, refusals
from readdod.extraction.charsets import decode_body
from readdod.extraction.encodings import Overflow, read_body
from readdod.extraction.extract import extract, extract_text
from readdod.extraction.guard import AddressGuard, Resolver
from readdod.extraction.pdf_process import PdfLimits, extract_pdf_isolated
from readdod.extraction.transport import GuardedTransport, fetch_deadline, timeouts
from readdod.items.models import Extraction
from readdod.runtime import retrying
from readdod.runtime.clock import SystemClock, iso
from readdod.runtime.retrying import OnRetry, RetryPolicy
from readdod.settings.config import FetchConfig

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_USER_AGENT",
    "FeedDocument",
    "FetchClient",
    "FetchedPage",
    "decode_body",
    "extract_url",
    "fetch",
    "fetch_feed",
    "make_client",
    "pdf_limits",
    "retry_policy",
]

DEFAULT_USER_AGENT: Final = FetchConfig().user_agent
DEFAULT_MAX_BYTES: Final = FetchConfig().max_bytes

_ACCEPT: Final = (
    "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,application/pdf;q=0.7,*/*;q=0.1"
)
_ACCEPT_ENCODING: Final = "gzip, deflate, br"
_FEED_ACCEPT: Final = (
    "application/atom+xml,application/rss+xml;q=0.9,application/xml;q=0.8,text/xml;q=0.8,*/*;q=0.1"
)

T = TypeVar("T")


class FetchedPage(msgspec.Struct, kw_only=True, frozen=True):
    """A fetched page, decoded to text; ``content_type`` is the bare media type."""

    url: str
    final_url: str
    status: int
    content_type: str
    html: str
    fetched_at: str
    #: The body as it came, for a document that is not text (a PDF); else empty.
    data: bytes = b""


class FetchClient(httpx.AsyncClient):
    """The shared HTTP client, with the fetch policy and address guard it was made with."""

    def __init__(
        self, config: FetchConfig, guard: AddressGuard, transport: GuardedTransport
    ) -> None:
        super().__init__(
            headers={
                "User-Agent": config.user_agent,
                "Accept": _ACCEPT,
                "Accept-Encoding": _ACCEPT_ENCODING,
            },
            timeout=timeouts(config, config.timeout_s),
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
    return FetchClient(cfg, guard, GuardedTransport(cfg, guard, ssl_context))


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

    async def one(t: httpx.Timeout) -> FetchedPage:
        return await _fetch(url, client, limit, hops, t, _read_page)

    return await _guarded(url, client, deadline, one)


class FeedDocument(msgspec.Struct, kw_only=True, frozen=True):
    """A feed's answer to a conditional GET: its bytes and validators, or ``not_modified``."""

    url: str
    final_url: str
    status: int
    not_modified: bool = False
    data: bytes = b""
    etag: str | None = None
    last_modified: str | None = None
    #: The response's Content-Type as sent (its charset tells how to read the bytes).
    content_type: str | None = None


#: The longest validator (ETag, Last-Modified) kept and sent back.
VALIDATOR_MAX: Final = 1_024
_VALIDATOR_RE: Final = re.compile(r"[\x20-\x7e]+")


def clean_validator(value: str | None) -> str | None:
    """A validator fit to keep and send back: printable ASCII (what an HTTP header
    carries as it came), at most VALIDATOR_MAX characters; None for anything else.

    A server's non-ASCII or control-character ETag is dropped, not kept: the next
    poll then asks for the whole feed, which costs a download and never a failure."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > VALIDATOR_MAX or not _VALIDATOR_RE.fullmatch(value):
        return None
    return value


async def fetch_feed(
    url: str,
    *,
    client: FetchClient,
    etag: str | None = None,
    last_modified: str | None = None,
    max_bytes: int | None = None,
) -> FeedDocument:
    """GET a feed once, conditionally (``If-None-Match``, ``If-Modified-Since``), through
    the same guard, redirect and size rules as a page (``max_bytes``: a smaller cap for
    feeds); its bytes are not decoded (the feed parser reads them with the response's
    charset and the XML's own encoding). Validators that are not clean
    (:func:`clean_validator`) are neither sent nor kept."""
    cfg = client.config
    limit = min(max_bytes, cfg.max_bytes) if max_bytes is not None else cfg.max_bytes
    conditions = {"Accept": _FEED_ACCEPT}
    etag, last_modified = clean_validator(etag), clean_validator(last_modified)
    if etag:
        conditions["If-None-Match"] = etag
    if last_modified:
        conditions["If-Modified-Since"] = last_modified

    async def one(t: httpx.Timeout) -> FeedDocument:
        return await _fetch(
            url, client, limit, cfg.max_redirects, t, _read_feed, headers=conditions
        )

    return await _guarded(url, client, cfg.timeout_s, one)


async def _guarded(
    url: str,
    client: FetchClient,
    deadline: float,
    one: Callable[[httpx.Timeout], Awaitable[T]],
) -> T:
    """Run one fetch within ``deadline``, every network failure an :class:`ExtractionError`."""
    cfg = client.config
    try:
        with anyio.fail_after(deadline) as scope:
            with fetch_deadline(scope):
                return await one(timeouts(cfg, deadline))
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
    (heartbeats, the control socket) responsive; a PDF is read in a child
    process (:mod:`readdod.extraction.pdf_process`), bounded in text,
    CPU time and memory, since pypdf would hold the interpreter lock.
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
    if page.content_type == mediatypes.PDF:
        return await extract_pdf_isolated(
            page.data,
            page.url,
            limits=pdf_limits(client.config, max_bytes),
            source="fetched",
            http_status=page.status,
            final_url=page.final_url,
            fetched_at=page.fetched_at,
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


def pdf_limits(config: FetchConfig, max_bytes: int | None = None) -> PdfLimits:
    """What one PDF may cost: ``fetch.max_bytes`` of text, ``pdf_cpu_s``, ``pdf_memory_mb``."""
    return PdfLimits(
        max_chars=max_bytes or config.max_bytes,
        cpu_s=config.pdf_cpu_s,
        memory_mb=config.pdf_memory_mb,
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


# --- one fetch ------------------------------------------------------------------


async def _fetch(
    url: str,
    client: FetchClient,
    max_bytes: int,
    max_redirects: int,
    timeouts: httpx.Timeout,
    read: Callable[[str, httpx.Response, int], Awaitable[T]],
    *,
    headers: dict[str, str] | None = None,
) -> T:
    _check_scheme(url, url)
    request = client.build_request("GET", url, timeout=timeouts, headers=headers)
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
            return await read(url, response, max_bytes)
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
    media_type, charset = mediatypes.parse_content_type(response.headers.get("content-type"))
    if status >= 400:
        page = ""
        if refusals.may_be_wall(status, response.headers):
            page = await _error_page(response, charset)
        raise refusals.http_error(url, status, response.reason_phrase, response.headers, page)
    if not 200 <= status < 300:
        raise refusals.not_a_page(url, status)
    mediatypes.check_declared(url, media_type)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise refusals.too_large(url, max_bytes)
    try:
        data = await read_body(response, max_bytes)
    except Overflow:
        raise refusals.too_large(url, max_bytes) from None
    media_type = mediatypes.page_type(url, media_type, data)
    if media_type == mediatypes.PDF:
        return FetchedPage(
            url=url,
            final_url=str(response.url),
            status=status,
            content_type=media_type,
            html="",
            fetched_at=iso(SystemClock().now_ms()) or "",
            data=data,
        )
    text = await anyio.to_thread.run_sync(decode_body, data, charset)
    if len(data) <= refusals.ERROR_BODY_BYTES:
        vendor = refusals.wall_vendor(response.headers, text, tiny_only=True)
        if vendor is not None:
            raise refusals.blocked_by_site(url, vendor, status)
    return FetchedPage(
        url=url,
        final_url=str(response.url),
        status=status,
        content_type=media_type,
        html=text,
        fetched_at=iso(SystemClock().now_ms()) or "",
    )


async def _read_feed(url: str, response: httpx.Response, max_bytes: int) -> FeedDocument:
    status = response.status_code
    if status == 304:
        return FeedDocument(url=url, final_url=str(response.url), status=status, not_modified=True)
    if status >= 400:
        _, charset = mediatypes.parse_content_type(response.headers.get("content-type"))
        page = ""
        if refusals.may_be_wall(status, response.headers):
            page = await _error_page(response, charset)
        raise refusals.http_error(url, status, response.reason_phrase, response.headers, page)
    if not 200 <= status < 300:
        raise refusals.not_a_page(url, status)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise refusals.too_large(url, max_bytes)
    try:
        data = await read_body(response, max_bytes)
    except Overflow:
        raise refusals.too_large(url, max_bytes) from None
    return FeedDocument(
        url=url,
        final_url=str(response.url),
        status=status,
        data=data,
        etag=clean_validator(response.headers.get("etag")),
        last_modified=clean_validator(response.headers.get("last-modified")),
        content_type=response.headers.get("content-type"),
    )


async def _error_page(response: httpx.Response, charset: str | None) -> str:
    """The start of an error answer's page, or "" if it cannot be read."""
    try:
        body = await read_body(response, refusals.ERROR_BODY_BYTES, truncate=True)
    except (httpx.HTTPError, ExtractionError):
        body = b""
    return decode_body(body, charset)
