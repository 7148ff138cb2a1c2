"""Article extraction from an HTML or plain-text string.

Pure: no network, no files, no event loop. The fetcher (:mod:`.fetch`) and
the ``html``/``text`` capture paths all end here, so one page gives one
:class:`~readdod.models.Extraction` however it arrived.

Every CSS query or Python walk over a whole page costs about a fifth of
parsing it, so the stages share passes and judge only what they must:

1. parse with selectolax/lexbor; one walk over the document collects the
   metadata elements, the semantic hints (``<article>``, ``<main>``,
   ``itemprop=articleBody``, JSON-LD) and the paragraphs;
2. readability-style scoring: every paragraph credits its parent, grandparent
   and great-grandparent, unless one of its ancestors is chrome (nav, header,
   footer, aside, form, hidden, ARIA landmarks) or named as boilerplate by its
   class/id; the best candidate (scaled by link density) is compared with
   its parent (an article split into sibling blocks) and with the semantic
   hints, per page;
3. prune inside the container (captions, share bars, bylines, dates, tag
   links, link lists, comments), then render blocks with a plain-text and a
   markdown form, and drop the short lines before the first paragraph and
   repeated blocks; the publisher's JSON-LD ``articleBody`` replaces the
   DOM's text when the DOM lost most of it.

No word lists: the vocabulary is that of class and id names, so pages in any
language are read the same way.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser

from readdod.errors import ErrorCode, ExtractionError
from readdod.models import Extraction
from readdod.text.scripts import HAN_KANA_RE
from readdod.text.words import latin_length, word_count

__all__ = ["EXTRACTOR", "extract", "extract_text", "word_count"]

EXTRACTOR: Final = "readdod/2"

# selectolax ships no type stubs; name the node type for readers.
Node = Any

EMPTY_HTML_MESSAGE: Final = (
    "The page has no readable article text (it may be built by JavaScript, "
    "behind a login or paywall, or not an article at all). "
    "Capture it again with --text and paste the article text yourself."
)
EMPTY_TEXT_MESSAGE: Final = "The provided text is empty; there is nothing to read."

# --- tag sets ----------------------------------------------------------------

# Never article text, wherever they sit.
_NEVER_TEXT: Final = (
    "script, style, noscript, template, svg, iframe, button, object, embed, dialog, "
    "select, textarea, input, canvas, map, audio, video, figcaption"
)
_NEVER_TEXT_TAGS: Final = frozenset(_NEVER_TEXT.split(", "))
# What the one query over the document collects.
_SCAN_TAGS: Final = frozenset(
    {"meta", "link", "title", "base", "script", "h1", "article", "main", "time"}
)
_PARAGRAPH_TAGS: Final = frozenset({"p", "pre", "td", "br"})
_SCAN_QUERY: Final = (
    'meta, link[rel~=canonical i], title, base, script[type="application/ld+json" i], h1, '
    "article, main, time, p, pre, td, br, [itemprop~=articleBody i], [role=main i]"
)
# Chrome that some sites (ASP.NET forms, modal snapshots) wrap around the whole
# page: dropped only when it does not hold the article.
_CHROME_TAGS: Final = frozenset({"nav", "header", "footer", "aside", "form", "menu"})
# Containers whose class/id/role can name them boilerplate.
_NAMED_TAGS: Final = frozenset(
    {
        "div", "section", "ul", "ol", "table", "dl", "details", "center", "article",
        "main", "nav", "header", "footer", "aside", "form", "menu",
    }
)  # fmt: skip
_CHROME_ROLES: Final = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "dialog", "alert", "search"}
)

_BLOCK_TAGS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center",
        "col", "colgroup", "dd", "details", "dialog", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
        "h4", "h5", "h6", "header", "hgroup", "hr", "html", "legend", "li",
        "main", "menu", "nav", "ol", "p", "pre", "search", "section", "summary",
        "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
# Elements that carry no readable text of their own (or whose text is a caption).
_SKIP_TAGS: Final = frozenset(
    {
        "area", "audio", "canvas", "embed", "figcaption", "head", "hr", "img",
        "input", "link", "map", "meta", "object", "option", "picture", "select",
        "source", "textarea", "title", "track", "video", "script", "style",
        "noscript", "template", "svg", "iframe", "button",
    }
)  # fmt: skip
_HEADINGS: Final = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_CODE_TAGS: Final = frozenset({"code", "kbd", "samp", "tt"})
_STRONG_TAGS: Final = frozenset({"strong", "b"})
_EM_TAGS: Final = frozenset({"em", "i"})

# --- class/id vocabulary -----------------------------------------------------
# Token-bounded so that "header" or "shadow" never reads as "ad".
_NEGATIVE_RE: Final = re.compile(
    r"(?:^|[\s_-])(?:ads?|advert\w*|banner|combx|comment\w*|com|contact|footer|footnote"
    r"|masthead|media|meta|nav\w*|newsletter|outbrain|promo\w*|related|scroll|share\w*"
    r"|shoutbox|sidebar|skyscraper|sponsor\w*|shopping|social|subscribe\w*|tags?|tool\w*"
    r"|widget\w*|teaser\w*|recirc\w*|trending|popular|most)(?=$|[\s_-])",
    re.IGNORECASE,
)
_POSITIVE_RE: Final = re.compile(
    r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story", re.IGNORECASE
)
# Class/id words, matched per token ("header" or "shadow" never reads as "ad");
# a prefix matches its derivations (comment, comments, commentlist).
_UNLIKELY_WORDS: Final = frozenset(
    {
        "ad", "ads", "agegate", "banner", "breadcrumb", "breadcrumbs", "colophon", "combx",
        "community", "disqus", "footer", "gdpr", "header", "masthead", "menu", "newsletter",
        "pager", "pagination", "popup", "related", "remark", "reply", "replies", "rss",
        "sharing", "shoutbox", "sidebar", "skyscraper", "social", "supplemental", "trending",
        "outbrain", "taboola",
    }
)  # fmt: skip
_UNLIKELY_PREFIXES: Final = (
    "advert", "comment", "cookie", "promo", "share", "sponsor", "subscribe", "recirc",
)  # fmt: skip
_MAYBE_RE: Final = re.compile(r"and|article|body|column|content|main|shadow")
# Inside the chosen container: everything that is about the article, not of it.
_JUNK_WORDS: Final = frozenset(
    {
        "ad", "ads", "breadcrumb", "breadcrumbs", "disqus", "modal", "newsletter", "outbrain",
        "paywall", "popup", "related", "reply", "replies", "sharing", "signup", "social",
        "taboola", "credit", "credits", "dateline", "timestamp", "published", "updated",
        "tag", "tags", "tagged", "toolbar", "tools", "print", "email", "follow", "trending",
        "more", "also", "readmore", "gallery", "slideshow", "carousel", "hidden",
        "visuallyhidden", "sronly",
    }
)  # fmt: skip
_JUNK_PREFIXES: Final = (
    "advert", "comment", "cookie", "promo", "recommend", "share", "sponsor", "subscribe",
    "caption", "byline", "author", "recirc", "teaser", "screenreader", "widget",
)  # fmt: skip
_CAMEL_RE: Final = re.compile(r"(?<=[a-z])(?=[A-Z])")
_UNLIKELY: Final = 1
_JUNK: Final = 2


_WORD_VERDICT: Final = {
    **dict.fromkeys(_UNLIKELY_WORDS, _UNLIKELY),
    **dict.fromkeys(_JUNK_WORDS - _UNLIKELY_WORDS, _JUNK),
    **dict.fromkeys(_JUNK_WORDS & _UNLIKELY_WORDS, _UNLIKELY | _JUNK),
}
_ALL_PREFIXES: Final = _UNLIKELY_PREFIXES + _JUNK_PREFIXES


def _names(names: str, cache: dict[str, int]) -> int:
    """Verdict bits for a class/id string; pages repeat class strings, hence ``cache``."""
    verdict = cache.get(names)
    if verdict is not None:
        return verdict
    verdict = 0
    low = names.lower()
    split = low if low == names else _CAMEL_RE.sub(" ", names).lower()  # newsCaption
    for token in split.replace("_", " ").replace("-", " ").split():
        bits = _WORD_VERDICT.get(token)
        if bits is not None:
            verdict |= bits
        elif token.startswith(_ALL_PREFIXES):
            if token.startswith(_UNLIKELY_PREFIXES):
                verdict |= _UNLIKELY
            if token.startswith(_JUNK_PREFIXES):
                verdict |= _JUNK
    if "sr-only" in low or "screen-reader" in low or "visually-hidden" in low:
        verdict |= _JUNK
    if verdict:
        if verdict & _UNLIKELY and _MAYBE_RE.search(low):
            verdict &= ~_UNLIKELY
        if verdict & _JUNK and _POSITIVE_RE.search(low):
            verdict &= ~_JUNK
    cache[names] = verdict
    return verdict


# Elements inside the container that pruning looks at.
_PRUNE_TAGS: Final = frozenset(
    {"div", "section", "ul", "ol", "table", "dl", "details", "p", "span", "aside", "figure",
     "time"}
)  # fmt: skip
# Microdata that marks an element as metadata about the article.
_META_ITEMPROPS: Final = frozenset(
    {"datepublished", "datemodified", "datecreated", "author", "creator", "publisher"}
)

# --- thresholds --------------------------------------------------------------
_MIN_PARAGRAPH_CHARS: Final = 25
_SEMANTIC_MIN_CHARS: Final = 200
_LD_BODY_MIN_CHARS: Final = 500
_LD_BODY_PREFERRED_RATIO: Final = 0.7
_MAX_BYLINE_CHARS: Final = 100
_SHORT_TITLE_CHARS: Final = 120
_EXCERPT_CHARS: Final = 200
_CLIMB_RATIO: Final = 0.62
_LEAD_SHORT_CHARS: Final = 30
_LEAD_PARAGRAPH_CHARS: Final = 100
_CLIMB_LEVELS: Final = 1
_RANKED: Final = 4  # candidates whose link density is worth measuring
_LINK_LIST_DENSITY: Final = 0.5
_DATE_LINE_EXTRA_CHARS: Final = 30  # "Published on", "Updated:", a time zone

# Marks a <br> while a block's text is gathered (a line separator, so that
# collapsing whitespace inside a line cannot mistake it for a newline).
_BR: Final = "\u2028"
_INVISIBLE: Final = "\u200b\u2060\ufeff\u00ad"
_INVISIBLE_RE: Final = re.compile(f"[{_INVISIBLE}]")
_BLANK_LINES_RE: Final = re.compile(r"\n{3,}")
_HTML_BLOCK_RE: Final = re.compile(r"<(?:p|br|div|h[2-6]|li)\b", re.IGNORECASE)
_LINES_RE: Final = re.compile(r"\n\s*\n|\n")
_CJK_RE: Final = HAN_KANA_RE
_TITLE_SEP_RE: Final = re.compile(r"\s+[|\-–—·•»~/:]\s+")
_BY_RE: Final = re.compile(r"^(?:by|von|por|par|di|door|av|af)\s+", re.IGNORECASE)
_CODE_LANG_RE: Final = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)", re.IGNORECASE)
_LD_ARTICLE_TYPES: Final = frozenset(
    {
        "Article", "NewsArticle", "BlogPosting", "TechArticle", "ScholarlyArticle",
        "Report", "AnalysisNewsArticle", "OpinionNewsArticle", "ReportageNewsArticle",
        "ReviewNewsArticle", "BackgroundNewsArticle", "LiveBlogPosting",
        "SocialMediaPosting", "DiscussionForumPosting", "MedicalScholarlyArticle",
        "APIReference", "HowTo", "Recipe", "Review",
    }
)  # fmt: skip


# --- public API --------------------------------------------------------------


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
    try:
        tree = LexborHTMLParser(html)
    except Exception as exc:  # lexbor refuses only pathological input
        raise ExtractionError(
            "The page could not be parsed as HTML.",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=False,
            debug=repr(exc),
        ) from exc

    scan = _scan(tree, final_url or url)
    meta = _read_meta(tree, scan)
    try:
        blocks = _article_blocks(tree, scan, meta)
        ld_blocks = _ld_body_blocks(scan.ld_article, scan.base, meta)
    except RecursionError as exc:
        raise ExtractionError(
            "The page is nested too deeply to be read.",
            code=ErrorCode.EXTRACTION_PARSE_FAILED,
            retryable=False,
        ) from exc
    if ld_blocks and _text_len(blocks) < _LD_BODY_PREFERRED_RATIO * _text_len(ld_blocks):
        # The DOM lost most of the article (JS rendering, teaser markup):
        # the publisher's own articleBody is the better source.
        blocks = ld_blocks

    text = "\n\n".join(block.text for block in blocks)
    if not text.strip():
        raise ExtractionError(EMPTY_HTML_MESSAGE, code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
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
        markdown=_join_markdown(blocks),
        word_count=word_count(text),
        excerpt=_excerpt(meta.description or text),
        source=source,
        extractor=EXTRACTOR,
        fetched_at=fetched_at,
    )


def extract_text(text: str, *, title: str | None = None, url: str | None = None) -> Extraction:
    """Wrap text the user provided (or a text/plain page) as an extraction.

    The text is trusted as the article: only line endings and runs of blank
    lines are normalised, so the user's paragraphs survive.
    """
    if _has_invisible(text):
        text = _INVISIBLE_RE.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    body = "\n".join(line.rstrip() for line in text.split("\n"))
    if "\n\n\n" in body:
        body = _BLANK_LINES_RE.sub("\n\n", body)
    body = body.strip()
    if not body:
        raise ExtractionError(EMPTY_TEXT_MESSAGE, code=ErrorCode.EXTRACTION_EMPTY, retryable=False)
    clean_title = _ws(title) if title is not None else ""
    if not clean_title:
        first_line = _ws(body.split("\n", 1)[0])
        clean_title = first_line if len(first_line) <= _SHORT_TITLE_CHARS else ""
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


# --- metadata ----------------------------------------------------------------


@dataclass(slots=True)
class _Scan:
    """What one query over the whole page found, before anything is removed."""

    base: str | None
    metas: dict[str, str] = field(default_factory=dict)
    canonical: str | None = None
    doc_title: str = ""
    h1s: list[Node] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    date_published: str | None = None
    paragraph_nodes: list[Node] = field(default_factory=list)
    ld_objects: list[dict[str, Any]] = field(default_factory=list)
    ld_article: dict[str, Any] | None = None
    article_body_id: int | None = None
    keep: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Meta:
    title: str | None = None
    headlines: frozenset[str] = frozenset()
    byline: str | None = None
    published_at: str | None = None
    lang: str | None = None
    site_name: str | None = None
    canonical_url: str | None = None
    description: str | None = None


def _scan(tree: Node, page_url: str | None) -> _Scan:
    """Collect metadata elements, semantic hints and paragraphs in one query."""
    scan = _Scan(base=page_url)
    canonical_href: str | None = None
    semantic: list[Node] = []
    articles: list[Node] = []
    paragraphs = scan.paragraph_nodes
    for node in tree.css(_SCAN_QUERY):
        tag = node.tag
        if tag in _PARAGRAPH_TAGS:
            paragraphs.append(node)
            continue
        attrs = node.attributes
        if tag not in _SCAN_TAGS or tag == "article":  # maybe matched by itemprop or role
            if "articlebody" in (attrs.get("itemprop") or "").lower().split():
                scan.article_body_id = node.mem_id
                semantic.append(node)
                continue
            if (attrs.get("role") or "").lower() == "main":
                semantic.append(node)
                continue
            if tag != "article":
                continue
        if tag == "meta":
            content = attrs.get("content")
            if content:
                for attr in ("property", "name", "itemprop"):
                    key = attrs.get(attr)
                    if key:
                        scan.metas.setdefault(key.strip().lower(), content)
                if (attrs.get("http-equiv") or "").lower() == "content-language":
                    scan.metas.setdefault("content-language", content)
        elif tag == "link":
            if canonical_href is None and "canonical" in (attrs.get("rel") or "").lower().split():
                canonical_href = attrs.get("href")
        elif tag == "title":
            if not scan.doc_title:
                scan.doc_title = _ws(node.text())
        elif tag == "base":
            href = attrs.get("href")
            if href and href.strip():
                scan.base = urljoin(page_url or "", href.strip()) or page_url
        elif tag == "script":
            if (attrs.get("type") or "").strip().lower() == "application/ld+json":
                try:
                    data = json.loads(node.text() or "", strict=False)
                except ValueError:
                    data = None
                scan.ld_objects.extend(_flatten_ld(data))
        elif tag == "h1":
            scan.h1s.append(node)
        elif tag == "article":
            articles.append(node)
        elif tag == "main":
            semantic.append(node)
        elif tag == "time":
            stamp = attrs.get("datetime")
            if stamp and stamp.strip():
                scan.times.append(stamp.strip())
                if (attrs.get("itemprop") or "").lower() == "datepublished":
                    scan.date_published = stamp.strip()
    scan.canonical = _resolve(scan.base, canonical_href)
    if scan.base is None and scan.canonical and scan.canonical.startswith(("https://", "http://")):
        # A saved page read without its URL still links where it did on the web.
        scan.base = scan.canonical
    if articles:
        # Only the main <article>: comment threads mark up each reply as one.
        semantic.append(articles[0] if len(articles) == 1 else max(articles, key=_node_text_len))
    for node in semantic:
        while node is not None and node.mem_id not in scan.keep:
            scan.keep.add(node.mem_id)
            node = node.parent
    scan.ld_article = _ld_article(scan.ld_objects)
    return scan


def _read_meta(tree: Node, scan: _Scan) -> _Meta:
    """Page metadata from the scan, JSON-LD and the document element."""
    ld = scan.ld_article or {}
    metas = scan.metas
    site_name = _first_meta(metas, "og:site_name", "application-name") or _ld_name(
        ld.get("publisher")
    )
    h1 = _ws(_best_h1(scan.h1s).text()) if scan.h1s else ""
    og_title = _first_meta(metas, "og:title", "twitter:title") or _ld_str(ld.get("headline"))
    if og_title:
        title = _strip_title_suffix(og_title, site_name, guess=False)
    elif h1:
        title = h1
    elif scan.doc_title:
        title = _strip_title_suffix(scan.doc_title, site_name, guess=True)
    else:
        title = ""
    headlines = frozenset(_fold(t) for t in (title, og_title or "", h1) if t)
    return _Meta(
        title=title or None,
        headlines=headlines,
        byline=_byline(tree, scan, ld),
        published_at=_published_at(scan, ld),
        lang=_lang(tree, metas),
        site_name=site_name,
        canonical_url=scan.canonical or _absolute(scan.base, _first_meta(metas, "og:url")),
        description=_first_meta(metas, "description", "og:description", "twitter:description"),
    )


def _best_h1(h1s: list[Node]) -> Node:
    """The headline: an ``<h1>`` inside the article markup if there is one."""
    for node in h1s:
        ancestor = node.parent
        for _ in range(8):
            if ancestor is None:
                break
            if ancestor.tag in ("article", "main"):
                return node
            ancestor = ancestor.parent
    return h1s[0]


def _first_meta(metas: dict[str, str], *names: str) -> str | None:
    for name in names:
        value = _ws(metas.get(name))
        if value:
            return value
    return None


def _byline(tree: Node, scan: _Scan, ld: dict[str, Any]) -> str | None:
    """Author names, from the most to the least deliberate markup."""
    candidates: list[str | None] = [
        _first_meta(scan.metas, "author", "article:author", "parsely-author", "sailthru.author"),
        _ld_name(ld.get("author")),
    ]
    for candidate in candidates:
        if cleaned := _clean_byline(candidate):
            return cleaned
    # Only now pay for another pass over the page, stopping at the first
    # match when that is the answer (it nearly always is).
    first = tree.css_first(_AUTHOR_QUERY)
    if first is None:
        return None
    if first.tag != "meta" and (cleaned := _author_name(first)):
        return cleaned
    for node in tree.css(_AUTHOR_QUERY)[1:4]:
        if node.tag != "meta" and (cleaned := _author_name(node)):
            return cleaned
    return None


_AUTHOR_QUERY: Final = "[itemprop~=author i], [rel~=author i], .byline, .author"


def _author_name(node: Node) -> str | None:
    name = node.css_first("[itemprop~=name i]")
    return _clean_byline(_ws((name or node).text()))


def _clean_byline(candidate: str | None) -> str | None:
    if not candidate or candidate.startswith(("http://", "https://")):
        return None
    cleaned = _BY_RE.sub("", candidate).strip(" ,|·–—-:")
    return cleaned if cleaned and len(cleaned) <= _MAX_BYLINE_CHARS else None


def _published_at(scan: _Scan, ld: dict[str, Any]) -> str | None:
    """Publication time as the page states it (usually ISO 8601)."""
    value = _first_meta(
        scan.metas, "article:published_time", "datepublished", "date", "pubdate",
        "publish-date", "dc.date", "dcterms.created", "dc.date.issued",
    )  # fmt: skip
    if value:
        return value
    for obj in (ld, *scan.ld_objects):
        found = _ld_str(obj.get("datePublished")) or _ld_str(obj.get("dateCreated"))
        if found:
            return found
    if scan.date_published:
        return scan.date_published
    return scan.times[0] if scan.times else None


def _lang(tree: Node, metas: dict[str, str]) -> str | None:
    root = tree.root
    lang = _ws(root.attributes.get("lang") or root.attributes.get("xml:lang")) if root else ""
    if not lang:
        lang = _ws(metas.get("content-language")).split(",")[0].strip()
    if not lang:
        lang = _ws(metas.get("og:locale")).replace("_", "-")
    return lang or None


def _strip_title_suffix(title: str, site_name: str | None, *, guess: bool) -> str:
    """Drop a " | Site" style suffix (or "Site | " prefix) from a page title.

    A known site name is removed wherever it sits. With ``guess`` (titles from
    ``<title>``, which nearly always carry the site) a short last segment is
    taken for the site name even when the name is unknown.
    """
    matches = list(_TITLE_SEP_RE.finditer(title))
    if not matches:
        return title
    first, last = matches[0], matches[-1]
    head, tail = title[: last.start()].strip(), title[last.end() :].strip()
    if site_name:
        site = _fold(site_name)
        if _fold(tail) == site:
            return head
        if _fold(title[: first.start()]) == site:
            return title[first.end() :].strip()
    if not guess:
        return title
    if head and len(tail.split()) <= 5 and (len(head.split()) >= 2 or len(head) > len(tail)):
        return head
    return title


# --- JSON-LD -----------------------------------------------------------------


def _flatten_ld(data: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    if depth > 4:
        return
    if isinstance(data, list):
        for entry in data:
            yield from _flatten_ld(entry, depth + 1)
    elif isinstance(data, dict):
        yield data
        for key in ("@graph", "mainEntity", "mainEntityOfPage"):
            if isinstance(data.get(key), list | dict):
                yield from _flatten_ld(data[key], depth + 1)


def _ld_types(obj: dict[str, Any]) -> set[str]:
    kind = obj.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)}


def _ld_article(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The object describing the article itself, if the page has one."""
    for obj in objects:
        if _ld_types(obj) & _LD_ARTICLE_TYPES:
            return obj
    for obj in objects:
        if isinstance(obj.get("articleBody"), str):
            return obj
    return None


def _ld_str(value: Any) -> str | None:
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, str) and value.strip():
        return _ws(value)
    return None


def _ld_name(value: Any) -> str | None:
    """A person or organisation name; several authors are joined with commas."""
    items = value if isinstance(value, list) else [value]
    names: list[str] = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name.strip() and not name.startswith(("http:", "https:")):
            names.append(_ws(name))
    return ", ".join(dict.fromkeys(names)) or None


def _ld_body_blocks(ld: dict[str, Any] | None, base: str | None, meta: _Meta) -> list[_Block]:
    """Blocks from JSON-LD ``articleBody`` when it is long enough to be the article."""
    body = ld.get("articleBody") if ld else None
    if not isinstance(body, str) or len(body.strip()) < _LD_BODY_MIN_CHARS:
        return []
    if _HTML_BLOCK_RE.search(body):
        fragment = LexborHTMLParser(body).body
        return _Renderer(base, meta.headlines).render(fragment) if fragment is not None else []
    paragraphs = (_ws(part) for part in _LINES_RE.split(body))
    return [_Block(p, p) for p in paragraphs if p]


# --- boilerplate and container choice ----------------------------------------


def _article_blocks(tree: Node, scan: _Scan, meta: _Meta) -> list[_Block]:
    """Strip the chrome, pick the article container, prune it and render it."""
    body = tree.body
    if body is None:
        return []
    judge = _Boilerplate(body, scan.keep)
    cjk = (meta.lang or "").lower().startswith(("ja", "zh")) or bool(
        _CJK_RE.search(meta.title or scan.doc_title)
    )
    paragraphs = _paragraphs(scan.paragraph_nodes, cjk=cjk)
    container = _choose_container(body, paragraphs, scan, judge)
    _prune(container, judge)
    blocks = _Renderer(scan.base, meta.headlines).render(container)
    return _tidy(blocks)


def _decompose_reversed(nodes: list[Node]) -> None:
    """Remove nodes given in document order.

    Going backwards frees descendants before their ancestors, so no node is
    touched after an ancestor's removal freed it.
    """
    for node in reversed(nodes):
        node.decompose()


class _Boilerplate:
    """Decides, once per element, whether it is chrome or named boilerplate.

    Chrome is nav/header/footer/aside/form/menu, ARIA landmarks other than
    main, and hidden elements; named boilerplate is readability's "unlikely
    candidates" rule, guarded the same way (a name that also says
    content/article/main keeps the element). Either is kept when it wraps the
    page's article markup or, as a page-wide wrapper, most of its text.
    Only the ancestors of paragraphs and the chosen container's elements are
    ever judged, which is a small part of a page.
    """

    def __init__(self, body: Node, keep: set[int]) -> None:
        self.body = body
        self.keep = keep
        self.verdicts: dict[str, int] = {}
        self.judged: dict[int, bool] = {}
        self._total = -1

    def is_bad(self, node: Node, attrs: dict[str, str | None] | None = None) -> bool:
        """``attrs``: the node's attributes, if the caller has read them already."""
        key = node.mem_id
        bad = self.judged.get(key)
        if bad is None:
            bad = self.judged[key] = self._judge(node, attrs)
        return bad

    def _judge(self, node: Node, attrs: dict[str, str | None] | None) -> bool:
        tag = node.tag
        if tag in _NEVER_TEXT_TAGS:
            return True
        if node.mem_id in self.keep:
            return False
        chrome = tag in _CHROME_TAGS
        if not chrome:
            if attrs is None and (tag in _NAMED_TAGS or tag in _PRUNE_TAGS):
                attrs = node.attributes
            if not attrs:
                return False
            if (
                "hidden" in attrs
                or (attrs.get("aria-hidden") or "").lower() == "true"
                or "display:none" in (attrs.get("style") or "").replace(" ", "").lower()
            ):
                return True
            if tag not in _NAMED_TAGS:
                return False
            if (attrs.get("role") or "").lower() in _CHROME_ROLES:
                chrome = True
            else:
                names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
                if len(names) <= 1 or not _names(names, self.verdicts) & _UNLIKELY:
                    return False
                if _is_embed(node):
                    return False
        text = node.text()
        if (
            len(text) > 2000
            and node.css_first("p") is not None
            and _link_density(node, len(text)) < 0.5  # cheaper than the body's text
        ):
            if self._total < 0:
                self._total = _node_text_len(self.body)
            # A comment thread can outweigh a short post, so a node named as
            # boilerplate escapes only as a page-wide wrapper.
            if _chars(text) > self._total * (0.5 if chrome else 0.8):
                return False
        return True

    def names(self, attrs: dict[str, str | None]) -> int:
        names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}"
        return _names(names, self.verdicts) if len(names) > 1 else 0


def _is_embed(node: Node) -> bool:
    """A wrapper around an embedded post (a quoted tweet or toot is article text)."""
    child = node.first_child
    while child is not None and not child.is_element_node:
        child = child.next
    return (
        child is not None
        and child.tag == "blockquote"
        and child.css_first("p") is not None
        and _link_density(child) < 0.5
    )


@dataclass(slots=True)
class _Paragraph:
    node: Node
    chars: int
    points: float


def _paragraphs(nodes: list[Node], *, cjk: bool = False) -> list[_Paragraph]:
    """Paragraph-like texts with their readability points.

    ``<br>``-separated text written straight into a ``<div>`` counts as a
    paragraph of that div (old CMSes do that), as readability does by
    wrapping such runs in ``<p>``. On a ``cjk`` page a character weighs
    about a word, so lengths are counted in Latin-letter terms.
    """
    minimum = _MIN_PARAGRAPH_CHARS // 3 if cjk else _MIN_PARAGRAPH_CHARS
    found: list[_Paragraph] = []
    br_parents: set[int] = set()
    for node in nodes:
        tag = node.tag
        if tag == "br":
            parent = node.parent
            if parent is None or parent.mem_id in br_parents or parent.tag in ("p", "td", "li"):
                continue
            br_parents.add(parent.mem_id)
            text = "".join(_inline_text(child) for child in parent.iter(include_text=True))
        else:
            text = node.text()
        if len(text) < minimum:
            continue
        chars = _chars(text)
        if cjk:
            chars += 2 * len(_CJK_RE.findall(text))
        if chars < _MIN_PARAGRAPH_CHARS:
            continue
        commas = text.count(",")
        if not text.isascii():
            commas += text.count("，") + text.count("、") + text.count("،")
        points = 1 + commas + min(chars / 100, 3)
        found.append(_Paragraph(node if tag != "br" else parent, chars, points))
    return found


def _inline_text(node: Node) -> str:
    """Text of a node that is inline content (text or non-block element), else ''."""
    if node.is_text_node:
        return str(node.text_content or "")
    if node.is_element_node and not _is_block(node.tag) and node.tag not in _SKIP_TAGS:
        return str(node.text() or "")
    return ""


@dataclass(slots=True)
class _Candidate:
    node: Node
    score: float = 0.0
    chars: int = 0  # paragraph characters inside


def _choose_container(
    body: Node, paragraphs: list[_Paragraph], scan: _Scan, judge: _Boilerplate
) -> Node:
    """The element that holds the article.

    The readability winner is compared with its parent (climbing while the
    parent holds much more paragraph text, i.e. the article is split into
    sibling blocks) and with the page's semantic markup, and the one that
    holds the article's paragraphs most tightly wins.
    """
    cands: dict[int, _Candidate] = {}
    body_id = body.mem_id
    clean: set[int] = {body_id}
    # Paragraphs mostly share a parent: credit each parent's ancestors once.
    groups: dict[int, tuple[Node, list[float]]] = {}
    for para in paragraphs:
        start = para.node if para.node.tag in ("div", "section") else para.node.parent
        if start is None:
            continue
        group = groups.get(start.mem_id)
        if group is None:
            group = groups[start.mem_id] = (start, [0.0, 0.0])
        group[1][0] += para.chars
        group[1][1] += para.points
    for start, (chars, points) in groups.values():
        if not _clean_chain(start, judge, clean):
            continue
        ancestor = start
        level = 0
        while ancestor is not None:
            key = ancestor.mem_id
            cand = cands.get(key)
            if cand is None:
                cand = cands[key] = _Candidate(ancestor)
            cand.chars += int(chars)
            if level < 3:
                cand.score += points / (1, 2, 6)[level]
            if key == body_id:
                break
            ancestor = ancestor.parent
            level += 1
    if not cands:
        return body
    ranked = sorted(cands.values(), key=lambda c: c.score, reverse=True)[:_RANKED]
    best, best_score = ranked[0], -math.inf
    for cand in ranked:
        if cand.node.mem_id == body_id:
            final = cand.score * 0.5
        else:
            raw = cand.score + _initial_score(cand.node)
            if max(raw, 0.0) <= best_score:
                continue  # cannot win whatever its links: skip measuring them
            final = raw * (1 - _link_density(cand.node))
        if final > best_score:
            best, best_score = cand, final
    top = _climb(best, cands, body_id)
    semantic = _semantic_container(scan, cands)
    if semantic is not None and scan.article_body_id == semantic.node.mem_id:
        # The publisher's own articleBody mark is the strongest hint there is.
        return semantic.node
    if semantic is not None and semantic.node.mem_id != top.node.mem_id:
        if _contains(semantic.node, top.node):
            # The scored block sits inside the article markup: keep the tighter
            # one unless the markup holds much more paragraph text.
            if top.chars < 0.8 * semantic.chars:
                return semantic.node
        elif _contains(top.node, semantic.node):
            if semantic.chars >= 0.6 * top.chars:
                return semantic.node
        elif semantic.chars > top.chars:
            return semantic.node
    return top.node


def _climb(top: _Candidate, cands: dict[int, _Candidate], body_id: int) -> _Candidate:
    """Move up while a near ancestor holds much more paragraph text.

    Articles split into sibling blocks (around figures, ads, pull quotes)
    score each block apart; their common ancestor is the article. Looking
    further than ``_CLIMB_LEVELS`` up reaches page wrappers that also hold
    teasers, which costs more than it saves.
    """
    while True:
        node = top.node.parent
        found: _Candidate | None = None
        for _ in range(_CLIMB_LEVELS):
            if node is None or node.mem_id == body_id:
                break
            up = cands.get(node.mem_id)
            if up is None:
                break
            if top.chars < _CLIMB_RATIO * up.chars:
                found = up
                break
            node = node.parent
        if found is None:
            return top
        top = found


def _clean_chain(node: Node | None, judge: _Boilerplate, clean: set[int]) -> bool:
    """True if no element from ``node`` up to the body is boilerplate."""
    seen: list[int] = []
    while node is not None:
        key = node.mem_id
        if key in clean:
            break
        if judge.is_bad(node):
            return False
        seen.append(key)
        node = node.parent
    clean.update(seen)
    return True


def _semantic_container(scan: _Scan, cands: dict[int, _Candidate]) -> _Candidate | None:
    """The page's own article markup, as a candidate, if it holds enough text."""
    options: list[_Candidate] = []
    if scan.article_body_id is not None:
        cand = cands.get(scan.article_body_id)
        if cand is not None and cand.chars >= _SEMANTIC_MIN_CHARS:
            return cand
    for cand in cands.values():
        tag = cand.node.tag
        if tag in ("article", "main") and cand.chars >= _SEMANTIC_MIN_CHARS:
            options.append(cand)
    if not options:
        return None
    articles = [c for c in options if c.node.tag == "article"]
    return max(articles or options, key=lambda c: c.chars)


def _contains(outer: Node, inner: Node) -> bool:
    node = inner.parent
    target = outer.mem_id
    while node is not None:
        if node.mem_id == target:
            return True
        node = node.parent
    return False


def _initial_score(node: Node) -> float:
    tag = node.tag
    if tag == "div":
        score = 5.0
    elif tag in ("pre", "td", "blockquote", "article"):
        score = 3.0
    elif tag in ("address", "ol", "ul", "dl", "dd", "dt", "li", "form"):
        score = -3.0
    elif tag in _HEADINGS or tag == "th":
        score = -5.0
    else:
        score = 0.0
    return score + _class_weight(node)


def _class_weight(node: Node) -> float:
    weight = 0.0
    attrs = node.attributes
    for value in (attrs.get("class"), attrs.get("id")):
        if not value:
            continue
        if _NEGATIVE_RE.search(value):
            weight -= 25
        if _POSITIVE_RE.search(value):
            weight += 25
    return weight


def _prune(container: Node, judge: _Boilerplate) -> None:
    """Remove what sits inside the article but is not of it.

    Chrome and hidden elements; share bars, captions, bylines, related links
    and comments by class/id (a wrapper around an embedded post stays);
    figures (their text is captions); date lines and author/date microdata;
    rel=tag links; lists and blocks that are mostly links.
    """
    # One walk: the links' text is credited to their ancestors first, since
    # the elements are judged by it (a css("a") query would be a second walk).
    nodes = list(container.traverse())
    tags: list[str | None] = [node.tag for node in nodes]
    linked: dict[int, int] = {}
    cid = container.mem_id
    for link, tag in zip(nodes, tags, strict=True):
        if tag != "a":
            continue
        chars = _chars(link.text())
        if not chars:
            continue
        ancestor = link.parent
        while ancestor is not None:
            key = ancestor.mem_id
            linked[key] = linked.get(key, 0) + chars
            if key == cid:
                break
            ancestor = ancestor.parent
    total = _node_text_len(container)
    doomed: list[Node] = []
    # What lies inside a doomed element goes with it: not worth judging
    # (comment threads and link lists are often most of a container).
    dead: set[int] = set()
    for node, tag in zip(nodes, tags, strict=True):
        if not tag or tag[0] == "-":  # comments
            continue
        if dead:
            parent = node.parent
            if parent is not None and parent.mem_id in dead:
                dead.add(node.mem_id)
                continue
        if tag == "a":
            # rel=tag links are the page's tag cloud, not its prose.
            rel = node.attributes.get("rel")
            if rel and "tag" in rel.lower().split():
                doomed.append(node)
            continue
        if (tag not in _PRUNE_TAGS and tag not in _CHROME_TAGS) or node.mem_id == cid:
            continue
        if _is_junk(node, tag, judge, linked.get(node.mem_id, 0), total):
            doomed.append(node)
            dead.add(node.mem_id)
    _decompose_reversed(doomed)


def _is_junk(node: Node, tag: str, judge: _Boilerplate, links: int, total: int) -> bool:
    """Whether an element of the container is about the article, not of it.

    ``links``: characters of link text inside; ``total``: the container's.
    """
    if tag == "figure":
        return node.css_first("blockquote, table, pre") is None
    if tag == "time":
        return _is_date_line(node)
    attrs = node.attributes
    if attrs or tag in _CHROME_TAGS:  # a bare element is never boilerplate
        if judge.is_bad(node, attrs):
            return True
        if (attrs.get("itemprop") or "").lower() in _META_ITEMPROPS:
            return True
        if judge.names(attrs) & _JUNK and _node_text_len(node) < total / 2 and not _is_embed(node):
            return True
    # A node's text holds its links' text: with links >= total / 3 it
    # cannot be a short link list, so its length is not worth reading.
    if links and links < total / 3 and tag in ("div", "section", "ul", "ol", "table", "dl", "p"):
        length = _node_text_len(node)
        return bool(length) and links / length > _LINK_LIST_DENSITY and length < total / 3
    return False


def _is_date_line(node: Node) -> bool:
    """A ``<time>`` that is (nearly) all of its block is metadata, not a sentence."""
    block = node.parent
    while block is not None and not _is_block(block.tag):
        block = block.parent
    if block is None:
        return False
    return _chars(block.text()) < _chars(node.text()) + _DATE_LINE_EXTRA_CHARS


def _tidy(blocks: list[_Block]) -> list[_Block]:
    """Drop repeated blocks (galleries and sticky bars repeat their text).

    Short lines before the first paragraph are what sits between a headline
    and the text (kickers, dates, categories, credits), not the article.
    """
    start = 0
    for index, block in enumerate(blocks):
        size = _visual_len(block.text)
        if size >= _LEAD_PARAGRAPH_CHARS:
            start = index
            break
        if size >= _LEAD_SHORT_CHARS or block.md.startswith("#"):
            break
    blocks = blocks[start:]
    seen: set[str] = set()
    out: list[_Block] = []
    for block in blocks:
        if len(block.text) >= 20:
            if block.text in seen:
                continue
            seen.add(block.text)
        out.append(block)
    return out


def _visual_len(text: str) -> int:
    """Length in Latin-letter terms: a CJK character carries about a word."""
    return latin_length(text)


def _node_text_len(node: Node) -> int:
    """Characters of text, whitespace not counted (cheap, comparable across nodes)."""
    return _chars(node.text())


def _chars(text: str) -> int:
    """Length without the usual whitespace (counting beats splitting on long texts)."""
    chars = len(text) - text.count(" ") - text.count("\n") - text.count("\t") - text.count("\r")
    return chars if text.isascii() else chars - text.count("\xa0")


def _link_density(node: Node, total: int = -1) -> float:
    """Share of the text inside links (raw lengths: both sides carry the same spacing).

    ``total``: the length of the node's text, if the caller has it already.
    """
    if total < 0:
        total = len(node.text())
    if total == 0:
        return 0.0
    linked = sum(len(link.text()) for link in node.css("a"))
    return min(linked / total, 1.0)


def _find_inside(node: Node, selector: str) -> Node | None:
    """First match strictly inside ``node`` (lexbor's css() also matches the node itself)."""
    for match in node.css(selector):
        if match.mem_id != node.mem_id:
            return match
    return None


# --- rendering ---------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    """One paragraph-level unit of the article.

    ``group`` ties blocks that markdown must join with a single newline
    (items of one list, rows of one table).
    """

    text: str
    md: str
    group: int | None = None


class _Renderer:
    """Walks a container and emits blocks with plain and markdown forms together.

    Inline content accumulates in two parallel buffers and becomes a block at
    the next block boundary, so text directly inside a ``<div>`` is not lost.
    """

    def __init__(self, base_url: str | None, headlines: frozenset[str]) -> None:
        self.blocks: list[_Block] = []
        self._plain: list[str] = []
        self._md: list[str] = []
        self._base = base_url
        self._headlines = headlines
        self._group: int | None = None
        self._groups = 0

    def render(self, node: Node) -> list[_Block]:
        self._children(node)
        self._flush()
        return self.blocks

    # dispatch

    def _children(self, node: Node) -> None:
        # The hottest loop of rendering: text nodes are handled inline.
        plain, md = self._plain, self._md
        for child in node.iter(include_text=True):
            tag: str | None = child.tag
            if tag == "-text":
                # Raw: whitespace is collapsed once per block, in _flush.
                text = child.text_content or ""
                plain.append(text)
                md.append(text)
            elif tag and tag[0] != "-" and tag not in _SKIP_TAGS:  # not a comment
                self._element(child, tag)

    def _node(self, node: Node) -> None:
        tag: str | None = node.tag
        if tag == "-text":
            text = node.text_content or ""
            self._plain.append(text)
            self._md.append(text)
        elif tag and tag[0] != "-" and tag not in _SKIP_TAGS:
            self._element(node, tag)

    def _element(self, node: Node, tag: str) -> None:
        if tag == "br":
            self._push(_BR, _BR)
        elif tag not in _BLOCK_TAGS and "-" not in tag:  # inline (see _is_block)
            parts = self._inline(node)
            if parts is None:  # an inline element wrapping blocks: look through it
                self._children(node)
            else:
                self._push(*parts)
        elif tag in _HEADINGS:
            self._heading(node, _HEADINGS[tag])
        elif tag == "pre":
            self._pre(node)
        elif tag in ("ul", "ol", "menu"):
            self._list(node, ordered=tag == "ol")
        elif tag == "li":
            self._item(node, "- ")
        elif tag == "blockquote":
            self._quote(node)
        elif tag == "table":
            self._table(node)
        else:
            if self._plain:
                self._flush()
            self._children(node)
            if self._plain:
                self._flush()

    # inline content

    def _push(self, plain: str, md: str) -> None:
        self._plain.append(plain)
        self._md.append(md)

    def _flush(self) -> None:
        if not self._plain:
            return
        raw_plain, raw_md = "".join(self._plain), "".join(self._md)
        self._plain.clear()
        self._md.clear()
        plain = _clean_lines(raw_plain)
        if plain:
            md = plain if raw_md == raw_plain else _clean_lines(raw_md)
            self.blocks.append(_Block(plain, md or plain, self._group))

    def _inline(self, node: Node) -> tuple[str, str] | None:
        """Plain and markdown forms of an inline subtree; None if it holds blocks."""
        plain: list[str] = []
        md: list[str] = []
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                text = child.text_content or ""
                plain.append(text)
                md.append(text)
                continue
            if not tag or tag[0] == "-" or tag in _SKIP_TAGS:
                continue
            if tag == "br":
                plain.append(_BR)
                md.append(_BR)
                continue
            if _is_block(tag):
                return None
            parts = self._inline(child)
            if parts is None:
                return None
            plain.append(parts[0])
            md.append(parts[1])
        text, markdown = "".join(plain), "".join(md)
        return text, self._decorate(node, text, markdown)

    def _decorate(self, node: Node, text: str, markdown: str) -> str:
        """Markdown for one inline element, keeping its outer whitespace outside."""
        inner = markdown.strip()
        if not inner:
            return markdown
        lead = markdown[: len(markdown) - len(markdown.lstrip())]
        trail = markdown[len(markdown.rstrip()) :]
        tag = node.tag
        if tag == "a":
            href = _link_target(self._base, node.attributes.get("href"))
            if href:
                inner = f"[{inner}]({href})"
        elif tag in _CODE_TAGS:
            code = _ws(text)
            fence = "``" if "`" in code else "`"
            inner = f"{fence}{code}{fence}"
        elif tag in _STRONG_TAGS:
            inner = f"**{inner}**"
        elif tag in _EM_TAGS:
            inner = f"*{inner}*"
        return f"{lead}{inner}{trail}"

    # blocks

    def _heading(self, node: Node, level: int) -> None:
        self._flush()
        text = _ws(node.text())
        if not text:
            return
        if level == 1 and (not self.blocks or _fold(text) in self._headlines):
            return  # the headline is metadata (title), not body text
        self.blocks.append(_Block(text, f"{'#' * level} {text}", self._group))

    def _pre(self, node: Node) -> None:
        self._flush()
        raw = (node.text() or "").replace("\r\n", "\n").translate(_INVISIBLE)
        code = textwrap.dedent("\n".join(line.rstrip() for line in raw.split("\n"))).strip("\n")
        if not code.strip():
            return
        fence = "````" if "```" in code else "```"
        md = f"{fence}{_code_language(node)}\n{code}\n{fence}"
        self.blocks.append(_Block(code, md, self._group))

    def _list(self, node: Node, *, ordered: bool) -> None:
        self._flush()
        outer = self._group
        if outer is None:
            self._groups += 1
            self._group = self._groups
        number = _int_attr(node, "start", 1)
        for child in node.iter(include_text=True):
            if child.is_element_node and child.tag == "li":
                self._item(child, f"{number}. " if ordered else "- ")
                number += 1
            else:
                self._node(child)
        self._flush()
        self._group = outer

    def _item(self, node: Node, marker: str) -> None:
        """One list item as one block; nested content is indented under the marker."""
        self._flush()
        start = len(self.blocks)
        self._children(node)
        self._flush()
        inner = self.blocks[start:]
        del self.blocks[start:]
        if not inner:
            return
        pad = " " * len(marker)
        lines = _join_markdown(inner).split("\n")
        md = "\n".join([marker + lines[0]] + [pad + line if line else "" for line in lines[1:]])
        text = "\n\n".join(block.text for block in inner)
        self.blocks.append(_Block(text, md, self._group))

    def _quote(self, node: Node) -> None:
        self._flush()
        start = len(self.blocks)
        outer = self._group
        self._group = None
        self._children(node)
        self._flush()
        self._group = outer
        inner = self.blocks[start:]
        del self.blocks[start:]
        if not inner:
            return
        md = "\n".join(f"> {line}" if line else ">" for line in _join_markdown(inner).split("\n"))
        text = "\n\n".join(block.text for block in inner)
        self.blocks.append(_Block(text, md, self._group))

    def _table(self, node: Node) -> None:
        """Data tables become one block per row; layout tables are read through."""
        self._flush()
        if _find_inside(node, "table, p, div, ul, ol, pre, blockquote, h2, h3, h4") is not None:
            self._children(node)
            self._flush()
            return
        self._groups += 1
        group = self._group if self._group is not None else self._groups
        header_done = False
        for row in node.css("tr"):
            cells = []
            plains = []
            for cell in row.css("th, td"):
                parts = self._inline(cell)
                plain_cell = _ws(cell.text())
                cells.append(_ws(parts[1]) if parts is not None else plain_cell)
                if plain_cell:
                    plains.append(plain_cell)
            if not any(cells):
                continue
            escaped = [cell.replace("|", "\\|") for cell in cells]
            md = "| " + " | ".join(escaped) + " |"
            if not header_done:
                md += "\n|" + "|".join(" --- " for _ in cells) + "|"
                header_done = True
            self.blocks.append(_Block(" | ".join(plains), md, group))


def _join_markdown(blocks: list[_Block]) -> str:
    """Blank lines between blocks, single newlines inside a list or table."""
    out: list[str] = []
    previous: _Block | None = None
    for block in blocks:
        if previous is not None:
            tight = block.group is not None and block.group == previous.group
            out.append("\n" if tight else "\n\n")
        out.append(block.md)
        previous = block
    return "".join(out)


def _is_block(tag: str) -> bool:
    # Custom elements (<x-paragraph>) are treated as blocks: joining them
    # inline would glue separate paragraphs together.
    return tag in _BLOCK_TAGS or "-" in tag


def _code_language(node: Node) -> str:
    for candidate in (node, node.css_first("code")):
        if candidate is None:
            continue
        attrs = candidate.attributes
        match = _CODE_LANG_RE.search(attrs.get("class") or "")
        if match:
            return str(match.group(1)).lower()
        if attrs.get("data-lang"):
            return _ws(attrs["data-lang"]).lower()
    return ""


def _int_attr(node: Node, name: str, default: int) -> int:
    try:
        return int(node.attributes.get(name) or default)
    except ValueError:
        return default


# --- small helpers -----------------------------------------------------------


def _absolute(base: str | None, href: str | None) -> str | None:
    """``href`` as an absolute http(s) URL, or None if it cannot be one."""
    url = _resolve(base, href)
    return url if url and url.startswith(("https://", "http://")) else None


def _resolve(base: str | None, href: str | None) -> str | None:
    if not href or not href.strip():
        return None
    href = href.strip()
    if not base or href.startswith(("https://", "http://")):
        return href
    return urljoin(base, href)


def _link_target(base: str | None, href: str | None) -> str | None:
    """Where a link points, or None for in-page and script links."""
    if not href:
        return None
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    if href.startswith(("https://", "http://")):
        target: str | None = href
    elif href.lower().startswith(("javascript:", "data:", "vbscript:")):
        return None
    else:
        target = _resolve(base, href)
    return target.replace(" ", "%20").replace(")", "%29") if target else None


def _ws(text: str | None) -> str:
    """Whitespace runs become one space (newlines included), none at the ends."""
    if not text:
        return ""
    if _has_invisible(text):
        text = _INVISIBLE_RE.sub("", text)
    return " ".join(text.split())


def _has_invisible(text: str) -> bool:
    """Whether ``text`` holds one of ``_INVISIBLE``.

    Plain substring tests: much cheaper than a regex scan of a long text (and
    immediate when the text's storage cannot hold such characters at all).
    """
    return not text.isascii() and (
        "\u00ad" in text or "\u200b" in text or "\u2060" in text or "\ufeff" in text
    )


def _clean_lines(text: str) -> str:
    """Normalise a block: collapse whitespace, one line per ``<br>``, no empty lines."""
    if _has_invisible(text):
        text = _INVISIBLE_RE.sub("", text)
    if _BR not in text:
        return " ".join(text.split())
    lines = (" ".join(line.split()) for line in text.split(_BR))
    return "\n".join(line for line in lines if line)


def _fold(text: str) -> str:
    return _ws(text).casefold()


def _text_len(blocks: list[_Block]) -> int:
    return sum(len(block.text) for block in blocks)


def _excerpt(text: str) -> str:
    """About the first 200 characters, cut at a word boundary.

    Only a head of the text is collapsed when that is enough: collapsing the
    whole article for 200 characters costs a pass over all of it.
    """
    flat = _ws(text[: 4 * _EXCERPT_CHARS])
    if len(flat) <= _EXCERPT_CHARS + 1 and len(text) > 4 * _EXCERPT_CHARS:
        flat = _ws(text)
    if len(flat) <= _EXCERPT_CHARS:
        return flat
    cut = flat[:_EXCERPT_CHARS]
    space = cut.rfind(" ")
    if space > _EXCERPT_CHARS * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-–—") + "…"
