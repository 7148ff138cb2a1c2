"""The page's metadata: title, byline, date, language, site name, canonical URL.

What a page says about its article is spread over OpenGraph and other
``<meta>`` tags, JSON-LD, microdata, ``<title>``, ``<h1>`` and the document
element; :func:`read_meta` reads it from the page scan and prefers the
publisher's deliberate markup to what the page merely shows. The headline
forms it finds also tell rendering which ``<h1>`` is the title, not body text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from readdod.extraction.dom import Node, absolute_url, fold, ws
from readdod.extraction.scan import Scan

_MAX_BYLINE_CHARS: Final = 100
_TITLE_SEP_RE: Final = re.compile(r"\s+[|\-–—·•»~/:]\s+")
_BY_RE: Final = re.compile(r"^(?:by|von|por|par|di|door|av|af)\s+", re.IGNORECASE)


@dataclass(slots=True)
class Meta:
    """What the page says about its article.

    ``headlines``: the casefolded forms of the title, so that rendering can
    tell the headline from a heading of the body.
    """

    title: str | None = None
    headlines: frozenset[str] = frozenset()
    byline: str | None = None
    published_at: str | None = None
    lang: str | None = None
    site_name: str | None = None
    canonical_url: str | None = None
    description: str | None = None


def read_meta(tree: Node, scan: Scan) -> Meta:
    """Page metadata from the scan, JSON-LD and the document element."""
    ld = scan.ld_article or {}
    metas = scan.metas
    site_name = _first_meta(metas, "og:site_name", "application-name") or _ld_name(
        ld.get("publisher")
    )
    h1 = ws(_best_h1(scan.h1s).text()) if scan.h1s else ""
    og_title = _first_meta(metas, "og:title", "twitter:title") or _ld_str(ld.get("headline"))
    if og_title:
        title = _strip_title_suffix(og_title, site_name, guess=False)
    elif h1:
        title = h1
    elif scan.doc_title:
        title = _strip_title_suffix(scan.doc_title, site_name, guess=True)
    else:
        title = ""
    headlines = frozenset(fold(t) for t in (title, og_title or "", h1) if t)
    return Meta(
        title=title or None,
        headlines=headlines,
        byline=_byline(tree, scan, ld),
        published_at=_published_at(scan, ld),
        lang=_lang(tree, metas),
        site_name=site_name,
        canonical_url=scan.canonical or absolute_url(scan.base, _first_meta(metas, "og:url")),
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
        value = ws(metas.get(name))
        if value:
            return value
    return None


def _byline(tree: Node, scan: Scan, ld: dict[str, Any]) -> str | None:
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
    return _clean_byline(ws((name or node).text()))


def _clean_byline(candidate: str | None) -> str | None:
    if not candidate or candidate.startswith(("http://", "https://")):
        return None
    cleaned = _BY_RE.sub("", candidate).strip(" ,|·–—-:")
    return cleaned if cleaned and len(cleaned) <= _MAX_BYLINE_CHARS else None


def _published_at(scan: Scan, ld: dict[str, Any]) -> str | None:
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
    lang = ws(root.attributes.get("lang") or root.attributes.get("xml:lang")) if root else ""
    if not lang:
        lang = ws(metas.get("content-language")).split(",")[0].strip()
    if not lang:
        lang = ws(metas.get("og:locale")).replace("_", "-")
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
        site = fold(site_name)
        if fold(tail) == site:
            return head
        if fold(title[: first.start()]) == site:
            return title[first.end() :].strip()
    if not guess:
        return title
    if head and len(tail.split()) <= 5 and (len(head.split()) >= 2 or len(head) > len(tail)):
        return head
    return title


def _ld_str(value: Any) -> str | None:
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, str) and value.strip():
        return ws(value)
    return None


def _ld_name(value: Any) -> str | None:
    """A person or organisation name; several authors are joined with commas."""
    items = value if isinstance(value, list) else [value]
    names: list[str] = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name.strip() and not name.startswith(("http:", "https:")):
            names.append(ws(name))
    return ", ".join(dict.fromkeys(names)) or None
