"""The fetcher against a real loopback server that misbehaves on purpose.

Limits (size, time, redirects), content types, charsets, compression bombs,
bot walls, HTTP errors and in-step retries, and the address guard.
"""

from __future__ import annotations

import functools
import ipaddress
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import brotli
import pytest

from readdod.errors import ErrorCode, ExtractionError, StepError
from readdod.extraction.charsets import decode_body
from readdod.extraction.fetch import FetchClient, extract_url, fetch, make_client
from readdod.extraction.guard import AddressGuard, blocked_kind
from readdod.runtime.retrying import RetryPolicy
from readdod.settings.config import FetchConfig
from tests.pageserver import (
    ARTICLE,
    ARTICLE_TEXT,
    ENCODED,
    Exchange,
    PageServer,
    brotli_bomb,
    encoded_page,
    gzip_bomb,
    html_page,
    self_signed,
    serve,
)

pytestmark = pytest.mark.anyio

#: Loopback allowed (the server lives there), small limits, tiny retry waits.
CFG = FetchConfig(
    allow_private=True,
    max_bytes=256 * 1024,
    max_redirects=3,
    timeout_s=2.0,
    connect_timeout_s=1.0,
    read_timeout_s=1.0,
    attempts=3,
    retry_initial_s=0.001,
    retry_max_s=0.01,
)


@pytest.fixture
def server() -> Iterator[PageServer]:
    with serve() as srv:
        yield srv


def client(**changes: object) -> FetchClient:
    import msgspec

    return make_client(msgspec.structs.replace(CFG, **changes))


async def failure(url: str, **changes: object) -> ExtractionError:
    async with client(**changes) as c:
        with pytest.raises(ExtractionError) as info:
            await fetch(url, client=c)
    return info.value


# --- normal pages ---------------------------------------------------------------------


async def test_article_is_fetched_and_extracted(server: PageServer) -> None:
    url = server.page("/post", ARTICLE)
    async with client() as c:
        result = await extract_url(url, client=c)
    assert result.source == "fetched" and result.http_status == 200
    assert result.title == "WAL notes"
    assert ARTICLE_TEXT[1] in result.text and "Footer text" not in result.text


async def test_user_agent_is_configurable(server: PageServer) -> None:
    seen: list[str] = []

    def script(ex: Exchange) -> None:
        seen.append(ex.headers.get("User-Agent", ""))
        ex.send(ARTICLE)

    url = server.route("/ua", script)
    async with client(user_agent="readdod-test/9") as c:
        await fetch(url, client=c)
    assert seen == ["readdod-test/9"]


# --- redirects --------------------------------------------------------------------------


async def test_redirect_chain_ends_at_the_page(server: PageServer) -> None:
    server.page("/post", ARTICLE)
    server.redirect("/r3", "/post", 307)
    server.redirect("/r2", server.url("/r3"), 301)
    url = server.redirect("/r1", "/r2")
    async with client() as c:
        page = await fetch(url, client=c)
    assert page.final_url == server.url("/post") and page.url == url
    assert [server.hits(p) for p in ("/r1", "/r2", "/r3", "/post")] == [1, 1, 1, 1]


async def test_redirect_loop_and_long_chain_give_up(server: PageServer) -> None:
    server.redirect("/loop-a", "/loop-b")
    loop = server.redirect("/loop-b", "/loop-a")
    for i in range(5):
        server.redirect(f"/hop{i}", f"/hop{i + 1}")
    server.page("/hop5", ARTICLE)
    for url in (loop, server.url("/hop0")):
        err = await failure(url)
        assert err.code is ErrorCode.EXTRACTION_FETCH_FAILED and not err.retryable
        assert "redirected more than 3 times" in err.message
    assert server.hits("/hop4") == 0  # the hop past the cap was never asked for


async def test_cookies_set_by_a_redirect_come_back_within_that_fetch_only(
    server: PageServer,
) -> None:
    cookies: list[str | None] = []

    def check(ex: Exchange) -> None:
        cookies.append(ex.headers.get("Cookie"))
        ex.send(ARTICLE)

    server.route("/page", check)
    url = server.route(
        "/consent",
        lambda ex: ex.send(
            b"", status=302, headers={"Location": "/page", "Set-Cookie": "ok=1; Path=/"}
        ),
    )
    async with client() as c:
        await fetch(url, client=c)
        await fetch(server.url("/page"), client=c)
    assert cookies == ["ok=1", None]


async def test_https_checks_the_certificate_of_the_name_not_the_address(
    tmp_path: Path,
) -> None:
    """The guard dials the checked IP itself; TLS must still verify the host name."""
    contexts = self_signed(tmp_path, "localhost")
    if contexts is None:
        pytest.skip("needs the openssl command to make a certificate")
    server_tls, client_tls = contexts
    with serve(server_tls) as srv:
        srv.page("/post", ARTICLE)
        cfg = FetchConfig(allow_networks=["127.0.0.0/8"], attempts=1)
        async with make_client(cfg, ssl_context=client_tls) as c:
            page = await fetch(f"https://localhost:{srv.port}/post", client=c)
            assert page.status == 200 and ARTICLE_TEXT[0] in page.html
            with pytest.raises(ExtractionError) as info:
                await fetch(f"https://127.0.0.1:{srv.port}/post", client=c)
        assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
        assert not info.value.retryable and "certificate" in info.value.message
        async with make_client(cfg) as c:  # the system's CAs do not know this one
            with pytest.raises(ExtractionError) as info:
                await fetch(f"https://localhost:{srv.port}/post", client=c)
        assert "certificate" in info.value.message
        assert srv.hits("/post") == 1


# --- size and time ------------------------------------------------------------------------


def _endless(ex: Exchange) -> None:
    ex.head(200, {"Content-Type": "text/html"})
    chunk = b"<p>" + b"z" * 65_536 + b"</p>"
    while not ex.stopping.is_set() and ex.write(chunk):
        pass


async def test_endless_body_hits_the_size_cap(server: PageServer) -> None:
    err = await failure(server.route("/endless", _endless))
    assert err.code is ErrorCode.EXTRACTION_TOO_LARGE and not err.retryable
    assert "fetch.max_bytes" in err.message and "--html" in err.message


async def test_declared_length_over_the_cap_is_refused_before_reading(server: PageServer) -> None:
    url = server.page("/huge", b"<p>" + b"h" * 300_000 + b"</p>")
    err = await failure(url)
    assert err.code is ErrorCode.EXTRACTION_TOO_LARGE


@pytest.mark.parametrize(
    ("encoding", "make"),
    [("gzip", gzip_bomb), ("br", brotli_bomb), ("deflate", None)],
)
async def test_compression_bombs_stop_at_the_cap_on_decompressed_bytes(
    server: PageServer, encoding: str, make: Callable[[int], bytes] | None
) -> None:
    inflated = 64 << 20
    body = make(inflated) if make else zlib.compress(b"<p>" + b"a" * inflated, 9)
    assert len(body) < 100_000  # small on the wire: the cap must apply after decoding
    url = server.page("/bomb", body, headers={"Content-Encoding": encoding})
    tracemalloc.start()
    try:
        err = await failure(url, max_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert err.code is ErrorCode.EXTRACTION_TOO_LARGE
    assert peak < 8 << 20, f"{peak:,} bytes in memory while refusing a 1 MiB cap"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate", "br", "gzip, br"])
async def test_compressed_pages_are_decoded(server: PageServer, encoding: str) -> None:
    raw = ARTICLE.encode()
    if encoding == "gzip":
        body = gzip_of(raw)
    elif encoding == "deflate":
        body = zlib.compress(raw)
    elif encoding == "raw-deflate":
        comp = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        body, encoding = comp.compress(raw) + comp.flush(), "deflate"
    elif encoding == "br":
        body = brotli.compress(raw)
    else:
        body = brotli.compress(gzip_of(raw))
    url = server.page("/z", body, headers={"Content-Encoding": encoding})
    async with client() as c:
        page = await fetch(url, client=c)
    assert page.html == ARTICLE


def gzip_of(data: bytes) -> bytes:
    comp = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return comp.compress(data) + comp.flush()


async def test_damaged_compression_fails_clearly(server: PageServer) -> None:
    url = server.page("/bad", b"this is not gzip at all", headers={"Content-Encoding": "gzip"})
    err = await failure(url)
    assert err.code is ErrorCode.EXTRACTION_FETCH_FAILED and "damaged" in err.message


async def test_slow_headers_hit_the_read_timeout(server: PageServer) -> None:
    url = server.route("/slow-head", lambda ex: None if ex.wait(5) else ex.send(ARTICLE))
    started = time.monotonic()
    err = await failure(url, read_timeout_s=0.2, attempts=1)
    assert time.monotonic() - started < 4  # the server holds its headers back for 5 s
    assert err.code is ErrorCode.EXTRACTION_FETCH_FAILED and err.retryable
    assert "stopped answering" in err.message


def _drip(ex: Exchange) -> None:
    ex.head(200, {"Content-Type": "text/html"})
    while not ex.wait(0.02) and ex.write(b"<p>drip</p>"):
        pass


async def test_slow_body_hits_the_whole_fetch_deadline(server: PageServer) -> None:
    started = time.monotonic()
    err = await failure(server.route("/drip", _drip), timeout_s=0.4, read_timeout_s=0.3)
    assert time.monotonic() - started < 10  # the drip never ends: only the deadline stops it
    assert err.code is ErrorCode.EXTRACTION_FETCH_FAILED and err.retryable
    assert "took longer than 0.4 seconds" in err.message


# --- content types -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),
        ("application/json", b'{"a": 1}'),
        ("text/html", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100),  # a lie
        ("application/octet-stream", b"\x00\x01\x02binary"),
        ("text/xml", b"<?xml version='1.0'?><rss><channel/></rss>"),
    ],
)
async def test_unsupported_types(server: PageServer, content_type: str | None, body: bytes) -> None:
    err = await failure(server.page("/thing", body, content_type=content_type))
    assert err.code is ErrorCode.EXTRACTION_UNSUPPORTED_TYPE and not err.retryable


@pytest.mark.parametrize("content_type", ["application/pdf", None])
async def test_a_pdf_is_read_as_one_and_a_broken_one_fails_to_parse(
    server: PageServer, content_type: str | None
) -> None:
    """PDFs are read (tests/test_pdf.py); these bodies only start like one."""
    url = server.page("/thing", b"%PDF-1.7 \x00\x00", content_type=content_type)
    async with client() as c:
        page = await fetch(url, client=c)
        assert (page.content_type, page.data, page.html) == (
            "application/pdf",
            b"%PDF-1.7 \x00\x00",
            "",
        )
        with pytest.raises(ExtractionError) as info:
            await extract_url(url, client=c)
    assert info.value.code is ErrorCode.EXTRACTION_PARSE_FAILED and not info.value.retryable


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        (None, "text/html"),
        ("application/octet-stream", "text/html"),
        ("application/xhtml+xml", "application/xhtml+xml"),
        ("text/xml", "application/xhtml+xml"),
        ("TEXT/HTML; Charset=UTF-8", "text/html"),
    ],
)
async def test_missing_or_vague_types_are_sniffed(
    server: PageServer, content_type: str | None, expected: str
) -> None:
    body = ARTICLE.replace("<html>", "<html xmlns='http://www.w3.org/1999/xhtml'>")
    async with client() as c:
        result = await extract_url(server.page("/p", body, content_type=content_type), client=c)
    assert result.content_type == expected
    assert ARTICLE_TEXT[0] in result.text


async def test_plain_text_is_read_as_text(server: PageServer) -> None:
    url = server.page("/notes.txt", "First line.\n\n\n\nSecond line.", content_type="text/plain")
    async with client() as c:
        result = await extract_url(url, client=c)
    assert result.content_type == "text/plain"
    assert result.text == "First line.\n\nSecond line."


# --- charsets --------------------------------------------------------------------------------


@pytest.mark.parametrize("declare", ["header", "meta", "none"])
@pytest.mark.parametrize("key", sorted(ENCODED))
async def test_encodings_come_out_right(server: PageServer, key: str, declare: str) -> None:
    body, content_type = encoded_page(key, declare=declare)
    url = server.page("/enc", body, content_type=content_type)
    async with client() as c:
        page = await fetch(url, client=c)
        result = await extract_url(url, client=c)
    assert ENCODED[key][1] in page.html
    assert "\ufffd" not in page.html
    assert ENCODED[key][1] in result.text


async def test_bom_wins_over_a_wrong_header(server: PageServer) -> None:
    body = "\ufeff<p>Señor Müller</p>".encode("utf-16-le")
    url = server.page("/bom", body, content_type="text/html; charset=iso-8859-1")
    async with client() as c:
        assert "Señor Müller" in (await fetch(url, client=c)).html


@pytest.mark.parametrize(
    ("label", "declare"), [("gb2312", "meta"), ("gb2312", "header"), ("shift_jis", "meta")]
)
async def test_utf8_bytes_under_a_legacy_charset_declaration_are_read_as_utf8(
    server: PageServer, label: str, declare: str
) -> None:
    """A page re-saved as UTF-8 under its old declaration (readability's ``qq`` test page:
    UTF-8 bytes, ``<meta charset=gb2312>``): the bytes are not valid in the declared
    charset and are valid UTF-8, so they are UTF-8, not mojibake."""
    text = ENCODED["gbk"][1]
    head = f"<meta http-equiv='Content-Type' content='text/html; charset={label}'>"
    title = "DeepMind新电脑已可利用记忆自学"
    html = html_page([text, text[: len(text) // 2]], title=title, head=head)
    content_type = f"text/html; charset={label}" if declare == "header" else "text/html"
    url = server.page("/moved", html.encode("utf-8"), content_type=content_type)
    async with client() as c:
        page = await fetch(url, client=c)
        result = await extract_url(url, client=c)
    assert text in page.html and "\ufffd" not in page.html
    assert result.title == title
    assert text in result.text


def test_a_declared_charset_that_decodes_is_kept() -> None:
    """Bytes valid in the declared charset stay in it, even where they are also UTF-8."""
    gbk = ENCODED["gbk"][1].encode("gbk")
    assert decode_body(b"<meta charset=gb2312>" + gbk, None).endswith(ENCODED["gbk"][1])
    # "Ã©" is valid windows-1252 and valid UTF-8 ("é"): the declaration wins.
    assert decode_body("Ã©".encode("cp1252"), "windows-1252") == "Ã©"
    # Neither valid in the declared charset nor UTF-8: the declared one, with U+FFFD.
    assert decode_body(b"\xa6\xff", "gb2312") == b"\xa6\xff".decode("gb18030", "replace")


# --- bot walls ---------------------------------------------------------------------------------

CF_CHALLENGE = (
    "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>"
    "<div class='main-wrapper'><h1>example.org</h1><p>Verifying you are human.</p></div>"
    "<script src='/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1'></script>"
    "</body></html>"
)


@pytest.mark.parametrize(
    ("status", "headers", "body", "vendor"),
    [
        (403, {"cf-mitigated": "challenge", "Server": "cloudflare"}, "<p>...</p>", "Cloudflare"),
        (503, {"Server": "cloudflare"}, CF_CHALLENGE, "Cloudflare"),
        (
            403,
            {},
            "<html><body><script src='https://ct.captcha-delivery.com/c.js'></script></body>",
            "DataDome",
        ),
        (200, {}, CF_CHALLENGE, "Cloudflare"),
        (405, {"x-amzn-waf-action": "captcha"}, "", "AWS WAF"),
    ],
)
async def test_bot_walls_are_reported_with_the_way_around(
    server: PageServer, status: int, headers: dict[str, str], body: str, vendor: str
) -> None:
    url = server.page("/wall", body, status=status, headers=headers)
    err = await failure(url)
    assert err.code is ErrorCode.EXTRACTION_BLOCKED_BY_SITE and not err.retryable
    assert vendor in err.message
    assert "readdod capture URL --html FILE" in err.message
    assert server.hits("/wall") == 1  # never retried


async def test_an_article_about_challenge_pages_is_not_a_wall(server: PageServer) -> None:
    text = [
        "Cloudflare shows a page titled <title>Just a moment...</title> and loads"
        " /cdn-cgi/challenge-platform/ scripts while it checks a visitor.",
        *ARTICLE_TEXT * 8,
    ]
    url = server.page("/about-walls", "<html><body>" + "".join(f"<p>{p}</p>" for p in text))
    async with client() as c:
        assert (await fetch(url, client=c)).status == 200


async def test_plain_403_suggests_html_capture(server: PageServer) -> None:
    err = await failure(server.page("/no", "<p>Forbidden</p>", status=403))
    assert err.code is ErrorCode.EXTRACTION_FETCH_FAILED and not err.retryable
    assert "HTTP 403" in err.message and "--html" in err.message


# --- HTTP errors and retries ---------------------------------------------------------------------


async def test_not_found_and_gone_are_not_retried(server: PageServer) -> None:
    for path, status in (("/missing", 404), ("/gone", 410)):
        url = server.page(path, "<p>no</p>", status=status)
        async with client() as c:
            with pytest.raises(ExtractionError) as info:
                await extract_url(url, client=c)
        assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
        assert not info.value.retryable and f"HTTP {status}" in info.value.message
        assert server.hits(path) == 1


async def test_server_errors_are_retried_then_fail_with_the_status(server: PageServer) -> None:
    url = server.page("/boom", "<p>oops</p>", status=500)
    retries: list[tuple[int, str]] = []

    async def on_retry(attempt: int, err: StepError, delay: float) -> None:
        retries.append((attempt, err.error_code))

    async with client() as c:
        with pytest.raises(ExtractionError) as info:
            await extract_url(url, client=c, on_retry=on_retry)
    assert "HTTP 500 Internal Server Error" in info.value.message and info.value.retryable
    assert server.hits("/boom") == 3
    assert retries == [(1, "EXTRACTION_FETCH_FAILED"), (2, "EXTRACTION_FETCH_FAILED")]


async def test_429_waits_as_long_as_retry_after_says(server: PageServer) -> None:
    def limited(ex: Exchange) -> None:
        if server.hits("/limited") == 1:
            ex.send("<p>slow down</p>", status=429, headers={"Retry-After": "1"})
        else:
            ex.send(ARTICLE)

    url = server.route("/limited", limited)
    delays: list[float] = []

    async def on_retry(attempt: int, err: StepError, delay: float) -> None:
        delays.append(delay)

    started = time.monotonic()
    async with client(retry_max_s=2.0) as c:
        result = await extract_url(url, client=c, on_retry=on_retry)
    assert time.monotonic() - started >= 0.95
    assert delays == [1.0] and result.title == "WAL notes"


async def test_retry_after_beyond_the_patience_fails_at_once(server: PageServer) -> None:
    url = server.page("/later", "<p>later</p>", status=503, headers={"Retry-After": "3600"})
    async with client() as c:
        with pytest.raises(ExtractionError) as info:
            await extract_url(url, client=c)
    assert info.value.retryable and info.value.retry_after == 3600.0
    assert server.hits("/later") == 1


async def test_reset_connections_are_retried(server: PageServer) -> None:
    def flaky(ex: Exchange) -> None:
        if server.hits("/flaky") <= 2:
            ex.reset()
        else:
            ex.send(ARTICLE)

    url = server.route("/flaky", flaky)
    async with client() as c:
        result = await extract_url(url, client=c)
    assert server.hits("/flaky") == 3 and result.title == "WAL notes"


async def test_one_attempt_means_no_retry(server: PageServer) -> None:
    url = server.page("/boom", "<p>oops</p>", status=502)
    async with client() as c:
        with pytest.raises(ExtractionError):
            await extract_url(url, client=c, retry=RetryPolicy(attempts=1))
    assert server.hits("/boom") == 1


# --- per-host limit ------------------------------------------------------------------------------


async def test_per_host_limit_holds_requests_back(server: PageServer) -> None:
    release = threading.Event()

    def held(ex: Exchange) -> None:
        release.wait(10)
        ex.send(ARTICLE)

    url = server.route("/held", held)
    async with client(per_host_limit=2) as c, anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(functools.partial(fetch, url, client=c))
        await anyio.to_thread.run_sync(server.wait_active, "/held", 2)
        with anyio.fail_after(5):
            while c.slots.waiting("127.0.0.1") < 3:
                await anyio.sleep(0.005)
        assert server.peak("/held") == 2
        release.set()
    assert server.hits("/held") == 5 and server.peak("/held") == 2
    assert c.slots.in_use("127.0.0.1") == 0


async def test_waiting_for_a_host_slot_does_not_count_against_the_fetch_deadline(
    server: PageServer,
) -> None:
    """Captures of one site queue for its slots; only the server's own time is timed."""
    release = threading.Event()

    def held(ex: Exchange) -> None:
        release.wait(10)
        ex.send(ARTICLE)

    held_url = server.route("/held", held)
    quick_url = server.page("/quick", ARTICLE)
    deadline = 0.2
    pages = []
    async with client(per_host_limit=1) as c, anyio.create_task_group() as tg:

        async def quick() -> None:
            pages.append(await fetch(quick_url, client=c, timeout_s=deadline))

        tg.start_soon(functools.partial(fetch, held_url, client=c, timeout_s=10))
        await anyio.to_thread.run_sync(server.wait_active, "/held", 1)
        tg.start_soon(quick)
        with anyio.fail_after(5):
            while c.slots.waiting("127.0.0.1") < 1:
                await anyio.sleep(0.005)
        # The queued fetch outlives its own deadline in the queue, then is served.
        await anyio.sleep(deadline * 2)
        release.set()
    assert [p.status for p in pages] == [200] and server.hits("/quick") == 1


# --- the address guard -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.0.1", "shared (carrier-grade NAT)"),
        ("240.0.0.1", "private"),
        ("::ffff:127.0.0.1", "loopback (inside an IPv6 address)"),
        ("::ffff:10.0.0.1", "private (inside an IPv6 address)"),
        ("2002:7f00:1::", "loopback (inside an IPv6 address)"),
        ("2002:a9fe:a9fe::", "link-local (inside an IPv6 address)"),
        ("64:ff9b::7f00:1", "loopback (inside an IPv6 address)"),
        ("2001:db8::1", "private"),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
        ("2002:808:808::", None),
    ],
)
def test_blocked_kinds(address: str, kind: str | None) -> None:
    assert blocked_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("127.0.0.1", "it is a loopback address, not"),
        ("0.0.0.0", "it is an unspecified address, not"),
        ("::ffff:10.0.0.1", "it is a private address (inside an IPv6 address), not"),
    ],
)
def test_blocked_address_message_reads_as_a_sentence(address: str, says: str) -> None:
    with pytest.raises(ExtractionError) as info:
        AddressGuard().check_ip(address, address)
    assert says in info.value.message


async def test_the_loopback_server_is_blocked_by_default(server: PageServer) -> None:
    server.page("/post", ARTICLE)
    async with make_client() as c:
        for host in (server.host, "localhost", "[::1]", "2130706433", "0x7f.1", "127.1"):
            with pytest.raises(ExtractionError) as info:
                await fetch(f"http://{host}:{server.port}/post", client=c)
            assert info.value.code is ErrorCode.EXTRACTION_BLOCKED_ADDRESS, host
            assert not info.value.retryable
            assert "fetch.allow_private" in info.value.message
    assert server.hits("/post") == 0


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::ffff:127.0.0.2]:{port}/post",
        "http://127.0.0.2:{port}/post",
        "http://0.0.0.0:{port}/post",
        "http://[::1]:{port}/post",
    ],
)
async def test_redirect_to_a_private_address_is_blocked(server: PageServer, target: str) -> None:
    server.page("/post", ARTICLE)
    url = server.redirect("/out", target.format(port=server.port))
    async with make_client(
        FetchConfig(allow_networks=["127.0.0.1/32"], attempts=1, timeout_s=2)
    ) as c:
        with pytest.raises(ExtractionError) as info:
            await fetch(url, client=c)
    assert info.value.code is ErrorCode.EXTRACTION_BLOCKED_ADDRESS
    assert server.hits("/out") == 1 and server.hits("/post") == 0


async def test_allow_networks_lets_one_network_through(server: PageServer) -> None:
    url = server.page("/post", ARTICLE)
    async with make_client(FetchConfig(allow_networks=["127.0.0.0/8"])) as c:
        assert (await fetch(url, client=c)).status == 200


async def test_dns_rebinding_is_caught_at_connect(server: PageServer) -> None:
    """The name looks public when checked, then resolves to loopback for the connection."""
    server.page("/post", ARTICLE)
    answers = iter([["93.184.215.14"], ["127.0.0.1"]])
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return next(answers)

    async with make_client(FetchConfig(), resolver=resolver) as c:
        with pytest.raises(ExtractionError) as info:
            await fetch(f"http://rebind.example:{server.port}/post", client=c)
    assert info.value.code is ErrorCode.EXTRACTION_BLOCKED_ADDRESS
    assert "rebind.example (127.0.0.1)" in info.value.message
    assert asked == ["rebind.example", "rebind.example"]
    assert server.hits("/post") == 0


async def test_a_name_with_one_private_address_is_blocked() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.215.14", "192.168.0.10"]

    guard = AddressGuard(resolver=resolver)
    with pytest.raises(ExtractionError) as info:
        await guard.resolve("mixed.example", 80)
    assert info.value.code is ErrorCode.EXTRACTION_BLOCKED_ADDRESS
    assert "192.168.0.10" in info.value.message


async def test_unknown_names_fail_without_retry() -> None:
    async with make_client(FetchConfig()) as c:
        with pytest.raises(ExtractionError) as info:
            await fetch("http://no-such-host.invalid/", client=c)
    assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
    assert not info.value.retryable and "no-such-host.invalid" in info.value.message


@pytest.mark.parametrize("guarded", [False, True], ids=["plain", "guarded"])
async def test_a_refused_connection_is_a_temporary_connect_failure(guarded: bool) -> None:
    """The transport's pool raises httpcore's errors; fetch sees them as httpx's."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens once the socket is closed
    changes: dict[str, object] = {"allow_networks": ["127.0.0.0/8"]} if guarded else {}
    err = await failure(f"http://127.0.0.1:{port}/", allow_private=not guarded, **changes)
    assert err.code == ErrorCode.EXTRACTION_FETCH_FAILED and err.retryable
    assert "Could not connect" in err.message and "ConnectError" in (err.debug or "")
