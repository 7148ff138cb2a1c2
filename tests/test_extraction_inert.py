"""Script and style bodies cut before parsing leave the parsed tree as it was, less their text.

The cut (``readdod.extraction.inert``) is found from each end tag with plain string
searches, not by tokenizing, so these tests hold it to the tokenizer: lexbor parses
the page whole and cut, and the two trees must agree node for node, attribute for
attribute and text for text, the text of scripts and styles aside. They run over
real pages (mozilla/readability's, the golden set's) and over pages generated from
the markup that could mislead a search: scripts that write ``<script>`` and
``<!--``, styles inside scripts, tags inside comments, attribute values, titles and
textareas, JSON-LD, quoted ``>`` in start tags, end tags in capitals.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from readdod.extraction import extract
from readdod.extraction.charsets import decode_body
from readdod.extraction.inert import empty_inert

TESTS = Path(__file__).parent
GOLDEN = TESTS.parent / "readdod" / "evaluation" / "golden"


#: Elements whose text the extractor does not read as the article's: a cut may fall
#: inside one when a page writes script markup in it as text.
UNREAD = frozenset({"script", "style", "textarea", "iframe", "svg", "noscript", "template"})


def shape(html: str | bytes) -> list[tuple[Any, ...]]:
    """Every node of the parsed page in document order, less the text of what is unread.

    The page's first ``<title>`` is read; any later one (an SVG's) is not.
    """
    tree = LexborHTMLParser(html)
    assert tree.root is not None
    out: list[tuple[Any, ...]] = []
    titles = 0
    for node in tree.root.traverse(include_text=True):
        if node.tag == "-text":
            if not _unread(node):
                out.append(("text", node.text_content))
            continue
        if node.tag == "title":
            titles += 1
            if titles > 1:
                node.attrs["data-unread"] = "1"
        out.append((node.tag, sorted(node.attributes.items(), key=str)))
    return out


def _unread(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in UNREAD or "data-unread" in parent.attributes:
            return True
        parent = parent.parent
    return False


def real_pages() -> list[tuple[str, str]]:
    pages = [
        (path.parent.name, decode_body(gzip.decompress(path.read_bytes()), None))
        for path in sorted((TESTS / "readability_pages").glob("*/source.html.gz"))
    ]
    pages += [(path.name, path.read_text("utf-8")) for path in sorted(GOLDEN.glob("*.html"))]
    return pages


LONG_JS = "var total = 0; for (var i = 0; i < 10; i++) { total += i * 2; } console.log(total);"
LONG_CSS = "body { margin: 0 auto; max-width: 40em; } .nav > li { display: inline-block; }"


def test_real_pages_parse_alike_cut_and_whole() -> None:
    pages = real_pages()
    assert len(pages) >= 10
    cut = 0
    for name, html in pages:
        inert = empty_inert(html)
        assert shape(inert) == shape(html), name
        cut += len(html.encode()) - len(inert)
    assert cut > 0, "the real pages' scripts and styles were cut"


def test_script_and_style_bodies_go_and_their_elements_stay() -> None:
    html = (
        f"<html><head><style>{LONG_CSS}</style><script src=a.js></script>"
        f"<script>{LONG_JS}</script></head><body><p>Kept text.</p></body></html>"
    )
    inert = empty_inert(html).decode()
    assert LONG_JS not in inert and LONG_CSS not in inert
    assert "<style></style>" in inert and "<script></script>" in inert
    assert "<p>Kept text.</p>" in inert


def test_json_ld_titles_and_short_bodies_keep_their_text() -> None:
    ld = '{"@context": "https://schema.org", "@type": "Article", "headline": "' + "x" * 80 + '"}'
    title = f"<title>How to write <script>{LONG_JS}</script> well</title>"
    html = (
        f'<html><head>{title}<script type="application/ld+json">{ld}</script>'
        "<script>var a = 1;</script></head><body><p>Text.</p></body></html>"
    )
    inert = empty_inert(html).decode()
    assert ld in inert and title in inert and "var a = 1;" in inert


def test_a_script_that_writes_a_commented_script_is_kept_where_its_end_is_unsure() -> None:
    # "<!--" then "<script" in a script's text: its first "</script>" does not end it,
    # and cutting the text that holds the "-->" would move where it ends.
    html = (
        "<html><body><script>document.write('<!--[if IE]><script>" + LONG_JS + "\\x3C/script>"
        "<![endif]-->');" + LONG_JS + "</script><!-- a comment --><p>After.</p></body></html>"
    )
    assert shape(empty_inert(html)) == shape(html)


def test_the_pages_title_is_found_past_a_script_that_writes_one() -> None:
    html = (
        "<html><head><script>document.write('<title>Old</title>');" + LONG_JS + "</script>"
        "<title>How to write <script>" + LONG_JS + "</script> well</title></head>"
        "<body><p>Text.</p></body></html>"
    )
    inert = empty_inert(html).decode()
    assert "<title>How to write <script>" + LONG_JS + "</script> well</title>" in inert
    assert "document.write('<title>Old</title>')" in inert  # an end tag in it: kept whole
    assert shape(inert) == shape(html)


def test_extraction_reads_the_same_article_from_the_cut_page() -> None:
    body = "".join(
        f"<p>{sentence} {LONG_JS.replace('<', 'less than')}</p>"
        for sentence in ("One paragraph of the article.", "Another one, longer than the first.")
    )
    html = f"<html><body><article>{body}<script>{LONG_JS}</script></article></body></html>"
    result = extract(html)
    assert "One paragraph of the article." in result.text
    assert LONG_JS not in result.text


# --- generated pages -----------------------------------------------------------

_BODY = st.sampled_from(
    [
        LONG_JS,
        LONG_CSS,
        LONG_JS + " document.write('<script src=x.js><\\/script>');",
        LONG_JS + " var s = '<style>" + LONG_CSS + "</style>';",
        LONG_JS + " /* <!-- */ var c = 1;",
        LONG_JS + " var d = '-->';",
        LONG_JS + " document.write('<!--<script>');",
        LONG_JS + " var e = '</SCRIPT>';",
        LONG_JS + " if (a<b && c>d) { go(); }",
        "",
        "x",
    ]
)
_START = st.sampled_from(
    [
        "<script>",
        "<script type='text/javascript'>",
        '<script data-x="a>b">',
        "<script\n src=x.js async>",
        '<script type="application/ld+json">',
        "<style>",
        "<style media='screen and (min-width: 10px)'>",
        "<SCRIPT>",
        "<scripts>",
    ]
)
_END = st.sampled_from(["</script>", "</style>", "</SCRIPT>", "</script >", "</style\n>"])
_MARKUP = st.sampled_from(
    [
        "<p>Some text, with an apostrophe's quote \" and < signs.</p>",
        "<div title='<script>alert(1)</script>'>attribute</div>",
        '<a href="#" data-html="<style>.x{color:red}</style>">link</a>',
        "<!-- <script>commented out</script> -->",
        "<!-- a comment -->",
        "<textarea><script>" + LONG_JS + "</script></textarea>",
        "<svg><style>" + LONG_CSS + "</style><script>" + LONG_JS + "</script></svg>",
        "<noscript><img src=x.gif></noscript>",
        "<iframe><script>" + LONG_JS + "</script></iframe>",
        "<template><script>" + LONG_JS + "</script></template>",
        "<table><tr><td>cell</td></tr></table>",
        "<pre>code &lt;script&gt;</pre>",
        # A script that writes commented scripts: the tokenizer's escaped states decide
        # where it ends, in capitals as in lower case.
        '<script>document.write(\'<!--[if IE 8]><script type="text/javascript">'
        + LONG_JS
        + "\\x3C/script><![endif]-->');"
        + LONG_JS
        + "</script>",
        "<SCRIPT LANGUAGE=JavaScript><!-- document.write('<script>"
        + LONG_JS
        + "</script>'); "
        + LONG_JS
        + " //--></SCRIPT>",
        "<!-- <script> -->",
        "<!-- <script> --!>",
        "<!-- <style> " + LONG_CSS + " -->",
        "\u00e9t\u00e9 \u65e5\u672c\u8a9e \U0001f600",
    ]
)


@st.composite
def elements(draw: st.DrawFn) -> str:
    """A start tag, a body and an end tag; the end need not match the start."""
    return draw(_START) + draw(_BODY) + draw(_END)


TITLE = "<title>A <script>" + LONG_JS + "</script> title</title>"


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(elements(), _MARKUP), min_size=1, max_size=12),
    st.booleans(),
    st.booleans(),
)
def test_generated_pages_parse_alike_cut_and_whole(
    parts: list[str], in_head: bool, titled: bool
) -> None:
    # Every start tag drawn is followed by an end tag: the one thing that misleads the
    # cut, a stray "</script>" after a "<script" that is not a tag, is not drawn. A
    # title with script markup in its text comes first, as a page's title does: one
    # written after a comment or a style that hides a "<title" may lose that text.
    content = "".join(parts)
    html = (
        f"<!DOCTYPE html><html><head>{TITLE if titled else ''}{content if in_head else ''}"
        f"</head><body>{'' if in_head else content}<p>End.</p></body></html>"
    )
    assert shape(empty_inert(html)) == shape(html), html
