"""Article extraction from an HTML or plain-text string.

Pure: no network, no files, no event loop. The fetcher (:mod:`.fetch`) and
the ``html``/``text`` capture paths all end here, so one page gives one
:class:`~readdod.items.models.Extraction` however it arrived.

Every CSS query or Python walk over a whole page costs about a fifth of
parsing it, so the stages share passes and judge only what they must:

1. parse with selectolax/lexbor; one walk over the document collects the
   metadata elements, the semantic hints (``<article>``, ``<main>``,
   ``itemprop=articleBody``, JSON-LD) and the paragraphs
   (:mod:`.metadata`);
2. readability-style scoring: every paragraph credits its parent, grandparent
   and great-grandparent, unless one of its ancestors is chrome (nav, header,
   footer, aside, form, hidden, ARIA landmarks) or named as boilerplate by its
   class/id (:mod:`.boilerplate`), ``<div>``s of bare text counting as
   paragraphs when a short winner would otherwise go unchallenged; the best
   candidate (scaled by link density) is compared with its parent (an
   article split into sibling blocks) and with the semantic hints, per page
   (:mod:`.content`); the title is refereed by ``<title>`` and the date
   written in ISO 8601 (:mod:`.metadata`);
3. prune inside the container (captions, share bars, bylines, dates, tag
   links, link lists, comments), then render blocks with a plain-text and a
   markdown form (:mod:`.markdown`), and drop the short lines before the
   first paragraph and repeated blocks; the publisher's JSON-LD
   ``articleBody`` replaces the DOM's text when the DOM lost most of it.

No word lists: the vocabulary is that of class and id names, so pages in any
language are read the same way. Node and text helpers are in :mod:`.dom`,
word counts in :mod:`.words`.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from readdod.errors import ErrorCode, ExtractionError
from readdod.extraction.content import article_blocks
from readdod.extraction.dom import INVISIBLE_RE, Node, has_invisible, parse, ws
from readdod.extraction.markdown import Block, join_markdown
from readdod.extraction.metadata import Meta, read_headline, read_meta
from readdod.extraction.scan import Scan, scan_page
from readdod.items.models import Extraction, ProvidedDocument
from readdod.text.sentences import split_sentences
from readdod.text.words import latin_length, word_count

__all__ = [
    "EXTRACTOR",
    "article_text",
    "extract",
    "extract_document",
    "extract_text",
    "word_count",
]

EXTRACTOR: Final = "readdod/2"

EMPTY_HTML_MESSAGE: Final = (
    "The page has no readable article text (it may be built by JavaScript, "
    "behind a login or paywall, or not an article at all). "
    "Capture it again with --text and paste the article text yourself."
)
EMPTY_TEXT_MESSAGE: Final = "The provided text is empty; there is nothing to read."

_SHORT_TITLE_CHARS: Final = 120
_EXCERPT_CHARS: Final = 200
_BLANK_LINES_RE: Final = re.compile(r"\n{3,}")


def extract(
    html: str,
    url: str | None = None,
    *,
    source: Literal["fetched", "provided_html"] = "provided_html",
    http_status: int | None = None,
    content_type: str | None = None,
    final_url: str | None = None,
    fetched_at: str | None = None,
) -> Extraction:
    """Find the article in ``html`` and describe it.

    ``url``/``final_url`` only resolve relative links and fill provenance;
    nothing is fetched. Raises :class:`ExtractionError` with
    ``EXTRACTION_EMPTY`` when no article text is found, because a summary of
    navigation links would be worse than an honest failure.
    """
    tree, scan = _scan(html, final_url or url)
    meta = read_meta(tree, scan)
    blocks, text = _article(tree, scan, meta, markdown=True)
    return Extraction(
        url=url,
        final_url=final_url,
        http_status=http_status,
        content_type=content_type,
        title=meta.title,
        byline=meta.byline,
        site_name=meta.site_name,
        published_at=meta.published_at,
        lang=meta.lang,
        canonical_url=meta.canonical_url,
        text=text,
        markdown=join_markdown(blocks),
        word_count=word_count(text),
        excerpt=_excerpt(meta.description or text),
        source=source,
        extractor=EXTRACTOR,
        fetched_at=fetched_at,
    )


def article_text(html: str, url: str | None = None) -> str:
    """The article's plain text alone: what :func:`extract` gives as ``text``.

    For callers that want the words and nothing about them (comparing
    extractors, indexing). What does not choose the text (byline, date,
    description, canonical URL), the Markdown form, the word count and the
    excerpt are not worked out. Raises :class:`ExtractionError` as
    :func:`extract` does.
    """
    tree, scan = _scan(html, url)
    return _article(tree, scan, read_headline(tree, scan), markdown=False)[1]


def _scan(html: str, url: str | None) -> tuple[Node, Scan]:
    """The parsed page and its scan (stage 1)."""
    try:
        tree = parse(html)
    except Exception as exc:  # lexbor refuses only pathological input
        raise ExtractionError(
            "The page could not be parsed as HTML.",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=False,
            debug=repr(exc),
        ) from exc
    return tree, scan_page(tree, url)


def _article(tree: Node, scan: Scan, meta: Meta, *, markdown: bool) -> tuple[list[Block], str]:
    """The article's blocks and plain text (stages 2 and 3); prunes ``tree``."""
    try:
        blocks = article_blocks(tree, scan, meta, markdown=markdown)
    except RecursionError as exc:
        raise ExtractionError(
            "The page is nested too deeply to be read.",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=False,
        ) from exc
    text = "\n\n".join(block.text for block in blocks)
    if not text.strip():
        raise ExtractionError(EMPTY_HTML_MESSAGE, code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
    return blocks, text


def extract_text(text: str, *, title: str | None = None, url: str | None = None) -> Extraction:
    """Wrap text the user provided (or a text/plain page) as an extraction.

    The text is trusted as the article: only line endings and runs of blank
    lines are normalised, so the user's paragraphs survive.
    """
    if has_invisible(text):
        text = INVISIBLE_RE.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    body = "\n".join(line.rstrip() for line in text.split("\n"))
    if "\n\n\n" in body:
        body = _BLANK_LINES_RE.sub("\n\n", body)
    body = body.strip()
    if not body:
        raise ExtractionError(EMPTY_TEXT_MESSAGE, code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
    clean_title = ws(title) if title is not None else ""
    if not clean_title:
        # A heading line, or the first sentence of a note written as one paragraph:
        # never the whole note.
        first_line = ws(body.split("\n", 1)[0])
        first = next(iter(split_sentences(first_line[: 4 * _SHORT_TITLE_CHARS])), "")
        clean_title = first if latin_length(first) <= _SHORT_TITLE_CHARS else ""
    return Extraction(
        url=url,
        title=clean_title or None,
        text=body,
        markdown=body,
        word_count=word_count(body),
        excerpt=_excerpt(body),
        source="provided_text",
        extractor=EXTRACTOR,
    )


def extract_document(
    text: str, document: ProvidedDocument, *, title: str | None = None, url: str | None = None
) -> Extraction:
    """A document's text (a PDF's), wrapped as text is, with what its file said of itself.

    One function for a PDF read here from its bytes and for the text a client
    read from one, so both extractions of the same file are the same.
    """
    wrapped = extract_text(text, title=title, url=url)
    return msgspec.structs.replace(
        wrapped,
        byline=document.byline,
        published_at=document.published_at,
        content_type=document.content_type,
        extractor=document.extractor,
        page_count=document.page_count,
    )


def _excerpt(text: str) -> str:
    """About the first 200 characters, cut at a word boundary.

    Only a head of the text is collapsed when that is enough: collapsing the
    whole article for 200 characters costs a pass over all of it.
    """
    flat = ws(text[: 4 * _EXCERPT_CHARS])
    if len(flat) <= _EXCERPT_CHARS + 1 and len(text) > 4 * _EXCERPT_CHARS:
        flat = ws(text)
    if len(flat) <= _EXCERPT_CHARS:
        return flat
    cut = flat[:_EXCERPT_CHARS]
    space = cut.rfind(" ")
    if space > _EXCERPT_CHARS * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"
