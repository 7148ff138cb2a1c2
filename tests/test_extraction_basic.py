"""The basic extractor on small pages, the demo pages, and the fetcher against a loopback server."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urljoin

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readdod.demo import SamplePage, sample_pages
from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction import article_text, extract, extract_text
from readdod.extraction.dom import clean_lines, resolve_url, ws
from readdod.extraction.extract import EXTRACTOR, word_count
from readdod.extraction.fetch import FetchClient, decode_body, extract_url, fetch
from readdod.extraction.fetch import make_client as _make_client
from readdod.extraction.scan import _ld_json
from readdod.settings.config import FetchConfig
from readdod.text.scripts import UNSPACED_RE
from readdod.text.words import _may_be_unspaced

pytestmark = pytest.mark.anyio


def make_client() -> FetchClient:
    """The loopback server below is refused by the address guard unless private is allowed."""
    return _make_client(FetchConfig(allow_private=True, attempts=1))


LOREM = (
    "Write-ahead logging keeps readers and writers out of each other's way, "
    "which matters once a second thread appears, and it usually makes commits faster too."
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def page(body: str, head: str = "", lang: str = "en") -> str:
    return f"<!DOCTYPE html><html lang='{lang}'><head>{head}</head><body>{body}</body></html>"


def article(*paragraphs: str) -> str:
    return "".join(f"<p>{p}</p>" for p in paragraphs)


# --- extract: boilerplate and container -------------------------------------


def test_boilerplate_elements_are_removed() -> None:
    html = page(
        "<header><nav><a href='/'>Home page link</a></nav></header>"
        "<script>var trackingCode = 1;</script><style>.x{color:red}</style>"
        "<noscript>Please enable JavaScript</noscript>"
        f"<article><h1>Headline</h1>{article(LOREM, LOREM + ' Second.')}"
        "<form><label>Email me</label><button>Sign up now</button></form></article>"
        "<aside>Sidebar promotion text</aside><footer>Copyright footer text</footer>",
        head="<title>Headline</title>",
    )
    text = extract(html).text
    assert "Write-ahead logging" in text
    for junk in ("Home page link", "trackingCode", "color:red", "enable JavaScript",
                 "Sign up now", "Email me", "Sidebar promotion", "Copyright footer"):  # fmt: skip
        assert junk not in text


def test_article_container_wins_over_link_heavy_sidebar() -> None:
    links = "".join(
        f"<p><a href='/post/{i}'>Another very interesting story number {i} you should read</a></p>"
        for i in range(30)
    )
    html = page(
        f"<div id='one'>{links}</div>"
        f"<div id='two'>{article(LOREM, 'Second, with commas, many, many commas. ' + LOREM)}</div>"
    )
    result = extract(html)
    assert "Write-ahead logging" in result.text
    assert "interesting story" not in result.text


def test_comments_and_share_bars_inside_the_article_are_dropped() -> None:
    html = page(
        f"<article>{article(LOREM, LOREM)}"
        "<div class='share-buttons'><a href='/s'>Share on Mastodon</a></div>"
        "<section class='comments'><p>First! Great post, really great post.</p></section>"
        "</article>"
    )
    text = extract(html).text
    assert "Write-ahead" in text
    assert "Mastodon" not in text
    assert "First!" not in text


def test_blocks_are_separated_by_one_blank_line() -> None:
    html = page(
        "<article><h1>Title</h1><p>First   paragraph\n spans\tlines.</p>"
        "<h2>A section</h2><ul><li>one</li><li>two</li></ul>"
        "<blockquote><p>Quoted.</p></blockquote>"
        "<figure><img src='x.png'><figcaption>A caption</figcaption></figure>"
        f"<p>{LOREM}</p><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>"
        "</article>"
    )
    assert extract(html).text == (
        "First paragraph spans lines.\n\nA section\n\none\n\ntwo\n\nQuoted.\n\n"
        f"{LOREM}\n\nk | v\n\na | 1"
    )


def test_headline_h1_and_figcaption_are_not_text() -> None:
    html = page(
        "<article><h1>The Headline Itself</h1>"
        "<figure><img src='a.png'><figcaption>Photo by someone</figcaption></figure>"
        f"{article(LOREM)}"
        "</article>"
    )
    result = extract(html)
    assert result.title == "The Headline Itself"
    assert "The Headline Itself" not in result.text
    assert "Photo by someone" not in result.text


# --- extract: metadata ---------------------------------------------------------


@pytest.mark.parametrize(
    ("doc_title", "expected"),
    [
        ("My Great Post | Some Site", "My Great Post"),
        ("My Great Post - Some Site", "My Great Post"),
        ("My Great Post — Some Site", "My Great Post"),
        ("Pre-processing data with care", "Pre-processing data with care"),
    ],
)
def test_title_from_document_title_loses_site_suffix(doc_title: str, expected: str) -> None:
    html = page(f"<article>{article(LOREM)}</article>", head=f"<title>{doc_title}</title>")
    assert extract(html).title == expected


def test_og_title_wins_and_known_site_name_is_stripped() -> None:
    head = (
        "<title>Ignored | Site</title>"
        "<meta property='og:title' content='Shared Title | Byte Ledger'>"
        "<meta property='og:site_name' content='Byte Ledger'>"
    )
    html = page(f"<h1>Other heading</h1><article>{article(LOREM)}</article>", head=head)
    result = extract(html)
    assert result.title == "Shared Title"
    assert result.site_name == "Byte Ledger"


def test_json_ld_and_meta_fields() -> None:
    head = """
      <meta name="description" content="What the page says about itself.">
      <link rel="canonical" href="/posts/1">
      <meta property="og:site_name" content="Example Site">
      <script type="application/ld+json">
        {"@context": "https://schema.org", "@graph": [
          {"@type": "WebSite", "name": "Example"},
          {"@type": "NewsArticle", "headline": "From JSON-LD",
           "datePublished": "2024-02-03T04:05:06Z",
           "author": [{"@type": "Person", "name": "Ada Byron"},
                      {"@type": "Person", "name": "Alan Turing"}]}]}
      </script>"""
    html = page(f"<article>{article(LOREM)}</article>", head=head, lang="en-GB")
    result = extract(html, "https://example.org/a/b?x=1", final_url="https://example.org/a/b")
    assert result.title == "From JSON-LD"
    assert result.byline == "Ada Byron, Alan Turing"
    assert result.published_at == "2024-02-03T04:05:06Z"
    assert result.lang == "en-GB"
    assert result.site_name == "Example Site"
    assert result.canonical_url == "https://example.org/posts/1"
    assert result.excerpt == "What the page says about itself."
    assert result.url == "https://example.org/a/b?x=1"
    assert result.source == "provided_html"
    assert result.extractor == EXTRACTOR


def test_meta_author_and_time_element() -> None:
    html = page(
        "<article><p class='byline'>By <a rel='author' href='/u/k'>Kim Park</a></p>"
        f"<time datetime='2023-01-02'>2 Jan</time>{article(LOREM)}</article>"
    )
    result = extract(html)
    assert result.byline == "Kim Park"
    assert result.published_at == "2023-01-02"


def test_excerpt_falls_back_to_the_start_of_the_text() -> None:
    html = page(f"<article>{article(LOREM * 4)}</article>")
    result = extract(html)
    assert result.excerpt.endswith("…")
    assert len(result.excerpt) <= 201
    assert LOREM.startswith(result.excerpt[:50])


def test_json_ld_article_body_rescues_a_script_rendered_page() -> None:
    body = "The article body lives only in JSON-LD. " * 20 + "\n\nSecond paragraph here."
    ld = json.dumps({"@type": "Article", "headline": "App shell", "articleBody": body})
    head = f'<script type="application/ld+json">{ld}</script>'
    html = page("<div id='app'>Loading…</div>", head=head)
    result = extract(html)
    assert result.text.startswith("The article body lives only in JSON-LD.")
    assert result.text.endswith("\n\nSecond paragraph here.")


@pytest.mark.parametrize(
    "ld",
    [
        "[" * 100_000 + "]" * 100_000,  # nested past any decoder's depth
        '{"@type": "Article", "headline": "Raw\nnewline", "x": NaN}',  # not strict JSON
        '<!--//--><![CDATA[//><!--\n{"@type": "Article"}\n//--><!]]>',  # XHTML's wrapper
    ],
)
def test_json_ld_that_is_not_plain_json_never_costs_the_article(ld: str) -> None:
    head = f'<script type="application/ld+json">{ld}</script>'
    result = extract(page(f"<article>{article(LOREM)}</article>", head=head))
    assert result.text.startswith(LOREM[:40])


@pytest.mark.parametrize(
    "wrapped",
    [
        '<!--\n{"@type": "Article", "x": 1}\n-->',
        '  //<![CDATA[\n{"@type": "Article", "x": 1}\n//  ]]>  \n',
        '<![CDATA[{"@type": "Article", "x": 1}]]>',
    ],
)
def test_json_ld_is_read_inside_a_comment_or_cdata_wrapper(wrapped: str) -> None:
    assert _ld_json(wrapped) == {"@type": "Article", "x": 1}


def test_word_count_handles_spaces_and_cjk() -> None:
    assert word_count("one two  three — four") == 4
    assert word_count("don't pay 10,000 e-mail (sic) — & ... __ _x_ 2019-11-19") == 7
    assert word_count("日本語の文章です") == 4
    assert word_count("Python と 日本") == 3


@pytest.mark.parametrize(
    "char",
    ["ก", "ລ", "က", "ក", "ぁ", "ア", "ｱ", "一", "㐀", "豈", "\U00020000", "\U0002fa1d"],
)
def test_word_count_sees_every_unspaced_script_beside_latin_punctuation(char: str) -> None:
    """The byte prefilter must not clear a text that holds an unspaced character."""
    assert word_count(f"“quoted” — {char * 4}") == 1 + 2


def test_the_unspaced_prefilter_lets_through_every_character_of_those_scripts() -> None:
    """Whatever ranges scripts.UNSPACED holds, none of their characters is cleared."""
    missed = [
        hex(code)
        for code in range(0x80, 0x40000)
        if not 0xD800 <= code <= 0xDFFF
        and UNSPACED_RE.match(chr(code))
        and not _may_be_unspaced(chr(code))
    ]
    assert missed == []


_SPACED = list(" \t\n\xa0\u3000\u2028\u200bab’é日")
_ASCII_SPACED = list(" \t\n\r\x0b\x0c\x1c\x1f\x01\x7fab.")


@given(
    st.text(alphabet=st.sampled_from(_SPACED))
    | st.text(alphabet=st.sampled_from(_ASCII_SPACED), min_size=60, max_size=400)
    | st.builds(
        lambda words, odd, at: (text := " ".join(words))[:at] + odd + text[at:],
        st.lists(st.sampled_from(["word", "a.b", "\x01", "\x7f"]), min_size=15, max_size=40),
        st.sampled_from(_ASCII_SPACED),
        st.integers(min_value=0, max_value=200),
    )
)
def test_collapsing_whitespace_keeps_its_rule_on_any_text(text: str) -> None:
    """The already-collapsed shortcuts return what splitting and joining would
    (long ASCII texts take one of their own)."""
    plain = text.replace("\u200b", "")
    assert ws(text) == " ".join(plain.split())
    lines = (" ".join(line.split()) for line in plain.split("\u2028"))
    assert clean_lines(text) == "\n".join(line for line in lines if line)


@pytest.mark.parametrize("space", list("\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"))
@pytest.mark.parametrize("at", [0, 17, -1])
def test_a_long_ascii_text_with_any_whitespace_is_collapsed(space: str, at: int) -> None:
    words = ["word"] * 30
    words[at] += space
    text = " ".join(words)
    assert ws(text) == " ".join(text.split()) == clean_lines(text)


_BASES = (
    "https://example.com/news/story.html?page=2#top",
    "http://Example.COM:8080",
    "https://user@example.com/a/b/",
    "ftp://example.com/a",
    "not a url",
)


@example(_BASES[0], "/a?")
@example(_BASES[0], "/a#")
@example(_BASES[0], "/a;")
@example(_BASES[1], "/a//b")
@example(_BASES[1], "/a/./b")
@example(_BASES[1], "/a/../b")
@example(_BASES[2], "/a\tb")
@example(_BASES[2], "/a b?c=d#e")
@given(
    st.sampled_from(_BASES),
    st.text(alphabet=st.sampled_from(list("/./?#;%:@ \t\nab9é")), max_size=14).map(
        lambda tail: "/" + tail
    ),
)
def test_a_root_relative_link_resolves_as_urljoin_resolves_it(base: str, href: str) -> None:
    """The shortcut for links like ``/a/b`` gives urljoin's answer for every path."""
    assert resolve_url(base, href) == urljoin(base, href.strip())


# --- extract: markdown ---------------------------------------------------------


def test_markdown_keeps_structure() -> None:
    html = page(
        "<article>"
        f"<p>Read <a href='/docs'>the docs</a> and run <code>make</code>. {LOREM}</p>"
        "<h2>Install</h2><h3>Details</h3>"
        "<ul><li>alpha</li><li>beta<ul><li>nested</li></ul></li></ul>"
        "<ol><li>first</li><li>second</li></ol>"
        "<pre><code class='language-python'>def f():\n    return 1\n</code></pre>"
        "<blockquote><p>Wise words.</p><p>More words.</p></blockquote>"
        "</article>"
    )
    md = extract(html, "https://example.org/guide/").markdown
    assert "[the docs](https://example.org/docs)" in md
    assert "`make`" in md
    assert "\n\n## Install\n\n### Details\n\n" in md
    assert "- alpha\n- beta\n  - nested" in md
    assert "1. first\n2. second" in md
    assert "```python\ndef f():\n    return 1\n```" in md
    assert "> Wise words.\n>\n> More words." in md


def test_markdown_links_of_a_page_without_its_url_resolve_against_its_canonical() -> None:
    body = f"<article><p>Read <a href='/docs'>the docs</a>. {LOREM}</p></article>"
    canonical = "<link rel='canonical' href='https://example.org/guide/'>"
    assert "[the docs](https://example.org/docs)" in extract(page(body, canonical)).markdown
    assert "[the docs](/docs)" in extract(page(body)).markdown


def test_canonical_url_falls_back_to_og_url() -> None:
    body = article(LOREM)
    og = "<meta property='og:url' content='/story/1'>"
    both = og + "<link rel='canonical' href='https://example.org/story'>"
    assert extract(page(body, og), "https://example.org/x").canonical_url == (
        "https://example.org/story/1"
    )
    assert extract(page(body, both)).canonical_url == "https://example.org/story"
    assert extract(page(body)).canonical_url is None
    assert extract(page(body, og)).canonical_url is None  # relative, and no page URL


def test_code_block_text_keeps_its_indentation() -> None:
    html = page(f"<article>{article(LOREM)}<pre>if x:\n    y()</pre></article>")
    assert "if x:\n    y()" in extract(html).text


# --- extract: failures ---------------------------------------------------------


@pytest.mark.parametrize(
    "html",
    [
        "",
        page(""),
        page("<nav><a href='/'>Home</a> <a href='/b'>Blog</a></nav><footer>© Site</footer>"),
        page("<script>render()</script><div id='root'></div>"),
    ],
)
def test_page_without_article_text_is_extraction_empty(html: str) -> None:
    with pytest.raises(ExtractionError) as info:
        extract(html)
    assert info.value.code is ErrorCode.EXTRACTION_EMPTY
    assert info.value.retryable is False
    assert "--text" in info.value.message
    with pytest.raises(ExtractionError) as alone:
        article_text(html)
    assert alone.value.code is ErrorCode.EXTRACTION_EMPTY


# --- extract_text --------------------------------------------------------------


def test_extract_text_normalises_and_titles() -> None:
    result = extract_text("My note\r\n\r\n\r\n\r\nBody line one.  \rBody line two.\n\n\n")
    assert result.text == "My note\n\nBody line one.\nBody line two."
    assert result.markdown == result.text
    assert result.title == "My note"
    assert result.source == "provided_text"
    assert result.word_count == 8


def test_extract_text_keeps_a_given_title_and_skips_long_first_lines() -> None:
    assert extract_text("x", title=" Given ").title == "Given"
    assert extract_text("word " * 60).title is None


@pytest.mark.parametrize("text", ["", "   ", "\n\r\n\t"])
def test_extract_text_blank_is_extraction_empty(text: str) -> None:
    with pytest.raises(ExtractionError) as info:
        extract_text(text)
    assert info.value.code is ErrorCode.EXTRACTION_EMPTY


# --- demo pages ----------------------------------------------------------------

# Per page: phrases from the article body, and phrases from its chrome.
DEMO_EXPECTATIONS: dict[str, tuple[list[str], list[str]]] = {
    "sqlite-wal-tutorial.html": (
        ["PRAGMA journal_mode=WAL;", "checkpoint copies the pages", "Wrapping up"],
        ["Newsletter archive", "Popular posts", "busy timeout tip saved", "too much coffee",
         "Share on Mastodon", "Copy link", "Leave a comment", "Getting started with SQLite"],
    ),
    "spacing-effect-research.html": (
        ["Hermann Ebbinghaus", "ridgeline", "One month | About one week", "What to do with this"],
        ["Research digests", "Recent digests", "Dr. Kim", "Email a friend", "reader-funded",
         "3 responses", "Podcast"],
    ),
    "read-later-opinion.html": (
        ["1,142 unread articles", "Save with a reason", "reading list and a landfill"],
        ["We use cookies", "Subscribe for $4", "deleted eleven", "serendipity", "3,904",
         "Meetings are a tax", "Post this on X", "published every Sunday"],
    ),
    "huerto-balcon-es.html": (
        ["No hace falta un jardín", "Riega con cabeza", "temporada siguiente"],
        ["Recetas de temporada", "Lo más leído", "Mi tomatera cherry", "Enviar por WhatsApp",
         "Todos los derechos reservados", "Comentarios"],
    ),
}  # fmt: skip


def test_sample_pages_are_listed_and_loaded() -> None:
    pages = sample_pages()
    assert {p.file for p in pages} == set(DEMO_EXPECTATIONS)
    for sample in pages:
        assert sample.html.lstrip().startswith("<!DOCTYPE html>")
        assert sample.url.startswith("https://example.org/")
        assert sample.intent and sample.tags


@pytest.mark.parametrize("sample", sample_pages(), ids=lambda p: p.file)
def test_demo_page_yields_only_its_article(sample: SamplePage) -> None:
    result = extract(sample.html, sample.url)
    wanted, unwanted = DEMO_EXPECTATIONS[sample.file]
    for phrase in wanted:
        assert phrase in result.text, phrase
    for phrase in unwanted:
        assert phrase not in result.text, phrase
    assert 500 <= result.word_count <= 900
    assert result.title and result.byline and result.published_at and result.site_name
    assert result.lang is not None and result.canonical_url == sample.url
    assert result.markdown.count("\n## ") + result.markdown.count("\n### ") >= 3


def test_threads_extracting_at_once_read_pages_as_one_thread_does() -> None:
    """Each thread queries through its own selector engine: none sees another's page."""
    pages = sample_pages() * 4
    alone = [extract(p.html, p.url) for p in pages]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda p: extract(p.html, p.url), pages))
    assert together == alone


def test_spanish_demo_page_reports_its_language() -> None:
    sample = next(p for p in sample_pages() if p.file == "huerto-balcon-es.html")
    result = extract(sample.html, sample.url)
    assert result.lang == "es"
    assert result.title == "Cómo empezar un huerto urbano en el balcón"
    assert result.byline == "Lucía Ferrer"


# --- fetch: a loopback HTTP server --------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    send_length: bool = True


Route = Callable[[], Reply]


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    routes: dict[str, Route]

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients hanging up early (size limit, timeout) is expected here."""


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        route = self.server.routes.get(self.path)
        reply = route() if route is not None else Reply(404, b"not here")
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if reply.send_length:
            self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""


HTML = "text/html; charset=utf-8"
ARTICLE_PAGE = page(
    f"<nav>Menu</nav><article><h1>Fetched</h1>{article(LOREM, LOREM)}</article>",
    head="<title>Fetched | Loopback</title>",
).encode()


def _redirect(to: str, status: int = 302) -> Route:
    return lambda: Reply(status, b"", {"Location": to})


@dataclass
class LoopbackServer:
    url: str
    release: threading.Event


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    release = threading.Event()

    def hang() -> Reply:
        release.wait(10)
        return Reply(200, ARTICLE_PAGE, {"Content-Type": HTML})

    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.routes = {
        "/page": lambda: Reply(200, ARTICLE_PAGE, {"Content-Type": HTML}),
        "/missing": lambda: Reply(404, b"gone", {"Content-Type": HTML}),
        "/busy": lambda: Reply(503, b"later", {"Content-Type": HTML}),
        "/limited": lambda: Reply(429, b"slow down", {"Content-Type": HTML}),
        "/r1": _redirect("/r2", 301),
        "/r2": _redirect("/r3", 307),
        "/r3": _redirect("/page"),
        "/loop-a": _redirect("/loop-b"),
        "/loop-b": _redirect("/loop-a"),
        "/to-ftp": _redirect("ftp://example.org/file"),
        "/big": lambda: Reply(200, b"<p>" + b"x" * 50_000 + b"</p>", {"Content-Type": HTML}),
        "/big-unsized": lambda: Reply(
            200, b"<p>" + b"y" * 50_000 + b"</p>", {"Content-Type": HTML}, send_length=False
        ),
        "/doc.pdf": lambda: Reply(200, b"%PDF-1.7 ...", {"Content-Type": "application/pdf"}),
        "/latin1": lambda: Reply(
            200,
            page(f"<article><p>Café crème à la française. {LOREM}</p></article>").encode("latin-1"),
            {"Content-Type": "text/html; charset=ISO-8859-1"},
        ),
        "/meta-charset": lambda: Reply(
            200,
            page(
                f"<article><p>Grüße aus Köln – {LOREM}</p></article>",
                head="<meta charset='windows-1252'>",
            ).encode("cp1252"),
            {"Content-Type": "text/html"},
        ),
        "/notes.txt": lambda: Reply(
            200, b"Plain notes\n\n\n\nA body line.", {"Content-Type": "text/plain"}
        ),
        "/hang": hang,
    }
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    host, port = httpd.server_address[:2]
    try:
        yield LoopbackServer(f"http://{host!s}:{port}", release)
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


async def test_fetch_html_page(server: LoopbackServer) -> None:
    async with make_client() as client:
        fetched = await fetch(f"{server.url}/page", client=client)
    assert fetched.status == 200
    assert fetched.content_type == "text/html"
    assert fetched.final_url == f"{server.url}/page"
    assert "Write-ahead logging" in fetched.html
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", fetched.fetched_at)


async def test_extract_url_fills_provenance(server: LoopbackServer) -> None:
    async with make_client() as client:
        result = await extract_url(f"{server.url}/r1", client=client)
    assert result.source == "fetched"
    assert result.url == f"{server.url}/r1"
    assert result.final_url == f"{server.url}/page"
    assert result.http_status == 200
    assert result.content_type == "text/html"
    assert result.fetched_at is not None
    assert result.title == "Fetched"
    assert "Menu" not in result.text and "Write-ahead logging" in result.text


async def test_extract_url_reads_plain_text(server: LoopbackServer) -> None:
    async with make_client() as client:
        result = await extract_url(f"{server.url}/notes.txt", client=client)
    assert result.source == "fetched"
    assert result.text == "Plain notes\n\nA body line."
    assert result.content_type == "text/plain"


@pytest.mark.parametrize(
    ("path", "status", "retryable"),
    [("/missing", 404, False), ("/busy", 503, True), ("/limited", 429, True)],
)
async def test_http_errors(server: LoopbackServer, path: str, status: int, retryable: bool) -> None:
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await fetch(f"{server.url}{path}", client=client)
    assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
    assert info.value.retryable is retryable
    assert f"HTTP {status}" in info.value.message


async def test_redirect_chain_is_followed(server: LoopbackServer) -> None:
    async with make_client() as client:
        fetched = await fetch(f"{server.url}/r1", client=client, max_redirects=3)
    assert fetched.final_url == f"{server.url}/page"
    assert fetched.url == f"{server.url}/r1"


async def test_too_many_redirects_fail(server: LoopbackServer) -> None:
    async with make_client() as client:
        with pytest.raises(ExtractionError) as chain:
            await fetch(f"{server.url}/r1", client=client, max_redirects=2)
        with pytest.raises(ExtractionError) as loop:
            await fetch(f"{server.url}/loop-a", client=client)
    for info in (chain, loop):
        assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
        assert info.value.retryable is False
        assert "redirect" in info.value.message


async def test_redirect_to_another_scheme_fails(server: LoopbackServer) -> None:
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await fetch(f"{server.url}/to-ftp", client=client)
    assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
    assert info.value.retryable is False


@pytest.mark.parametrize("path", ["/big", "/big-unsized"])
async def test_body_above_max_bytes_is_too_large(server: LoopbackServer, path: str) -> None:
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await fetch(f"{server.url}{path}", client=client, max_bytes=1000)
        assert (await fetch(f"{server.url}{path}", client=client, max_bytes=60_000)).html
    assert info.value.code is ErrorCode.EXTRACTION_TOO_LARGE
    assert info.value.retryable is False


async def test_a_damaged_pdf_is_a_parse_failure(server: LoopbackServer) -> None:
    """A PDF is read (tests/test_pdf.py); one cut short says so, for good."""
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await extract_url(f"{server.url}/doc.pdf", client=client)
    assert info.value.code is ErrorCode.EXTRACTION_PARSE_FAILED
    assert not info.value.retryable
    assert "not a PDF readdod can read" in info.value.message


async def test_charset_from_header_decodes_latin1(server: LoopbackServer) -> None:
    async with make_client() as client:
        fetched = await fetch(f"{server.url}/latin1", client=client)
    assert "Café crème à la française." in fetched.html
    assert "\ufffd" not in fetched.html


async def test_charset_from_meta_tag(server: LoopbackServer) -> None:
    async with make_client() as client:
        result = await extract_url(f"{server.url}/meta-charset", client=client)
    assert "Grüße aus Köln – " in result.text


async def test_timeout_is_retryable(server: LoopbackServer) -> None:
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await fetch(f"{server.url}/hang", client=client, timeout_s=0.2)
    assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
    assert info.value.retryable is True


async def test_connection_refused_is_retryable() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await fetch(f"http://127.0.0.1:{port}/", client=client)
    assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
    assert info.value.retryable is True
    assert isinstance(info.value.__cause__, Exception)
    assert "Could not connect to the server" in info.value.message


async def test_non_http_url_is_rejected_without_retry() -> None:
    async with make_client() as client:
        with pytest.raises(ExtractionError) as info:
            await fetch("file:///etc/passwd", client=client)
    assert info.value.code is ErrorCode.EXTRACTION_FETCH_FAILED
    assert info.value.retryable is False


def test_decode_body_fallbacks() -> None:
    assert decode_body("é".encode(), None) == "é"
    assert decode_body(b"\xef\xbb\xbfhi", "latin-1") == "hi"
    assert decode_body(b"caf\xe9", "no-such-charset") == "café"  # unknown label: detected
    assert decode_body(b"<meta charset=latin1>caf\xe9", None).endswith("café")


# --- class and id names: the lowercased fast path agrees with the patterns -------------

_NAME_PARTS = st.sampled_from(
    [
        *("ad", "ads", "advertisement", "banner", "comment", "comments", "footer", "nav"),
        *("navbar", "sidebar", "share", "tags", "most", "media", "Article", "BODY", "main"),
        *("content", "h-entry", "post", "header", "shadow", "admin", "shadows", "Kelvin"),
        *("ſ", "ı", "\u212a", "x", "1"),
    ]
)
_SEPARATORS = st.sampled_from(["", " ", "-", "_", "\t", "  ", ":", "."])


@given(st.lists(st.tuples(_SEPARATORS, _NAME_PARTS, st.booleans()), max_size=6))
def test_class_names_match_alike_on_the_fast_path_and_the_patterns(
    parts: list[tuple[str, str, bool]],
) -> None:
    """A class or id is judged by the same words however it is spelled in case."""
    from readdod.extraction import boilerplate as bp

    value = "".join(sep + (word.upper() if up else word) for sep, word, up in parts)
    assert bp._is_negative(value) == (bp._NEGATIVE_RE.search(value) is not None)
    assert bp._is_positive(value) == (bp._POSITIVE_RE.search(value) is not None)
