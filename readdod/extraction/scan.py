"""The one walk over a parsed page that every later stage reads from.

Every CSS query or Python walk over a whole page costs about a fifth of
parsing it, so a single query (:func:`scan_page`) collects, before anything
is removed, what metadata and content scoring both need: the metadata
elements (``<meta>``, ``<link rel=canonical>``, ``<title>``, ``<base>``,
``<time>``, ``<h1>``), the JSON-LD objects and the article among them, the
semantic hints (``<article>``, ``<main>``, ``itemprop=articleBody``,
``role=main``, whose ancestors are kept from boilerplate removal) and the
paragraphs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urljoin

import msgspec

from readdod.extraction.dom import Node, node_text_len, resolve_url, select, ws

# What the one query over the document collects.
_SCAN_TAGS: Final = frozenset(
    {"meta", "link", "title", "base", "script", "h1", "article", "main", "time"}
)
_PARAGRAPH_TAGS: Final = frozenset({"p", "pre", "td", "br"})
_SCAN_QUERY: Final = (
    'meta, link[rel~=canonical i], title, base, script[type="application/ld+json" i], h1, '
    "article, main, time, p, pre, td, br, [itemprop~=articleBody i], [role=main i]"
)
_LD_ARTICLE_TYPES: Final = frozenset(
    {
        "Article", "NewsArticle", "BlogPosting", "TechArticle", "ScholarlyArticle",
        "Report", "AnalysisNewsArticle", "OpinionNewsArticle", "ReportageNewsArticle",
        "ReviewNewsArticle", "BackgroundNewsArticle", "LiveBlogPosting",
        "SocialMediaPosting", "DiscussionForumPosting", "MedicalScholarlyArticle",
        "APIReference", "HowTo", "Recipe", "Review",
    }
)  # fmt: skip


@dataclass(slots=True)
class Scan:
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


def scan_page(tree: Node, page_url: str | None) -> Scan:
    """Collect metadata elements, semantic hints and paragraphs in one query."""
    scan = Scan(base=page_url)
    canonical_href: str | None = None
    semantic: list[Node] = []
    articles: list[Node] = []
    paragraphs = scan.paragraph_nodes
    for node in select(tree.root, _SCAN_QUERY):
        tag = node.tag
        if tag in _PARAGRAPH_TAGS:
            paragraphs.append(node)
            continue
        attrs = node.attributes
        if tag == "meta":  # the most numerous after paragraphs
            if content := attrs.get("content"):
                _file_meta(attrs, content, scan.metas)
            continue
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
        if tag == "link":
            if canonical_href is None and "canonical" in (attrs.get("rel") or "").lower().split():
                canonical_href = attrs.get("href")
        elif tag == "title":
            if not scan.doc_title:
                scan.doc_title = ws(node.text())
        elif tag == "base":
            href = attrs.get("href")
            if href and href.strip():
                scan.base = urljoin(page_url or "", href.strip()) or page_url
        elif tag == "script":
            if (attrs.get("type") or "").strip().lower() == "application/ld+json":
                scan.ld_objects.extend(_flatten_ld(_ld_json(node.text() or "")))
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
    scan.canonical = resolve_url(scan.base, canonical_href)
    if scan.base is None and scan.canonical and scan.canonical.startswith(("https://", "http://")):
        # A saved page read without its URL still links where it did on the web.
        scan.base = scan.canonical
    if articles:
        # Only the main <article>: comment threads mark up each reply as one.
        semantic.append(articles[0] if len(articles) == 1 else max(articles, key=node_text_len))
    for node in semantic:
        while node is not None and node.mem_id not in scan.keep:
            scan.keep.add(node.mem_id)
            node = node.parent
    scan.ld_article = _ld_article(scan.ld_objects)
    return scan


def _file_meta(attrs: dict[str, str | None], content: str, metas: dict[str, str]) -> None:
    """Files a ``<meta>``'s content under each name it has; the first of a name wins."""
    if key := attrs.get("property"):
        metas.setdefault(key.strip().lower(), content)
    if key := attrs.get("name"):
        metas.setdefault(key.strip().lower(), content)
    if key := attrs.get("itemprop"):
        metas.setdefault(key.strip().lower(), content)
    if (equiv := attrs.get("http-equiv")) and equiv.lower() == "content-language":
        metas.setdefault("content-language", content)


# --- JSON-LD -----------------------------------------------------------------


_LD_OPENING_RE: Final = re.compile(r"\s*(?://\s*)?(?:<!\[CDATA\[|<!--)")
_LD_CLOSINGS: Final = ("]]>", "-->")


def _ld_json(text: str) -> Any:
    """A JSON-LD script's data, or None when it cannot be read.

    Strict JSON is decoded by msgspec (a few times faster); the standard
    decoder then reads what pages write around it: control characters in
    strings, and a CDATA section or comment around the data (XHTML's habit).
    Data nested too deeply to decode is unreadable, not an error of the page.
    """
    try:
        return msgspec.json.decode(text)
    except RecursionError:
        return None  # no decoder reads deeper, and a wrapper adds no depth
    except msgspec.DecodeError:
        pass
    for candidate in (text, _unwrap(text)):
        try:
            return json.loads(candidate, strict=False)
        except (ValueError, RecursionError):
            continue
    return None


def _unwrap(text: str) -> str:
    """``text`` less a CDATA section or comment around it (``//`` before a marker
    too, which hides it from scripts). The closing marker is looked for at the
    end only: a pattern anchored there would be tried at every character."""
    if (opening := _LD_OPENING_RE.match(text)) is not None:
        text = text[opening.end() :]
    body = text.rstrip()
    for closing in _LD_CLOSINGS:
        if body.endswith(closing):
            body = body[: -len(closing)]
            before = body.rstrip()
            return before[:-2] if before.endswith("//") else body
    return text


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
