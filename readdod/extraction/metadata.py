"""The page's metadata: title, byline, date, language, site name, canonical URL.

What a page says about its article is spread over OpenGraph and other
``<meta>`` tags, JSON-LD, microdata, ``<title>``, ``<h1>`` and the document
element; :func:`read_meta` reads it from the page scan and prefers the
publisher's deliberate markup to what the page merely shows. The headline
forms it finds also tell rendering which ``<h1>`` is the title, not body text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from readdod.extraction.dom import Node, absolute_url, fold, select, ws
from readdod.extraction.scan import Scan
from readdod.text.dates import iso_8601

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
    meta = read_headline(tree, scan)
    ld = scan.ld_article or {}
    meta.byline = _byline(tree, scan, ld)
    meta.published_at = _published_at(scan, ld)
    meta.canonical_url = scan.canonical or absolute_url(
        scan.base, _first_meta(scan.metas, "og:url")
    )
    meta.description = _first_meta(
        scan.metas, "description", "og:description", "twitter:description"
    )
    return meta


def read_headline(tree: Node, scan: Scan) -> Meta:
    """Only what choosing and rendering the article's text need: the title and
    its headline forms, the language and the site name (the title's referee)."""
    ld = scan.ld_article or {}
    metas = scan.metas
    site_name = _first_meta(metas, "og:site_name", "application-name") or _ld_name(
        ld.get("publisher")
    )
    h1s = _Headings(scan.h1s)
    h1 = h1s.first()
    og_title = _first_meta(metas, "og:title", "twitter:title")
    title = _title(og_title, _ld_str(ld.get("headline")), h1s, scan.doc_title, site_name)
    headlines = frozenset(fold(t) for t in (title, og_title or "", h1) if t)
    return Meta(
        title=title or None,
        headlines=headlines,
        lang=_lang(tree, metas),
        site_name=site_name,
    )


def _title(
    og_title: str | None,
    headline: str | None,
    h1s: _Headings,
    doc_title: str,
    site_name: str | None,
) -> str:
    """The article's title, the page's ``<title>`` being the referee.

    The publisher's ``og:title`` and JSON-LD ``headline`` come first, the one
    the ``<title>`` bears out when they differ (a headline field can hold a
    description, an ``og:title`` a teaser). An ``<h1>`` is taken when the
    ``<title>`` bears it out: an ``<h1>`` can be the site's logo or a
    section's name ("Allergies Health Center" above the article). Otherwise
    the ``<title>`` less its site suffix, unless it is only the site's name
    or a short label beside a longer ``<h1>``. Every text given has its
    whitespace collapsed already, so case folding is all comparing takes.
    """
    # The <title> less its site suffix, worked out only when needed (with
    # an og:title alone it seldom is).
    heads: list[str] = []

    def head() -> str:
        if not heads:
            stripped = _strip_title_suffix(doc_title, site_name, guess=True) if doc_title else ""
            heads.extend((stripped, stripped.casefold()))
        return heads[0]

    def agrees(folded: str) -> bool:
        """Whether the ``<title>`` bears a (folded) candidate out: it holds its head, or
        the reverse."""
        if not doc_title:
            return True
        head()
        title_head = heads[1]
        return bool(folded) and (
            folded in title_head or (bool(title_head) and title_head in folded)
        )

    if headline:
        folded = headline.casefold()
        if not (agrees(folded) or any(folded == h1.casefold() for h1 in h1s)):
            headline = None  # a JSON-LD headline nothing else on the page says
    published = [t for t in (og_title, headline) if t]
    if len(published) == 2 and not agrees(published[0].casefold()):
        published.reverse()  # the headline the <title> bears out, not the og:title
    if published:
        chosen = published[0]
        stripped = _strip_title_suffix(chosen, site_name, guess=False)
        if stripped == chosen and doc_title and chosen.casefold() == doc_title.casefold():
            stripped = head()  # the <title> repeated, site suffix and all
        if _TITLE_SEP_RE.search(stripped):
            whole = stripped.casefold()
            for h1 in h1s:
                if whole.startswith(h1.casefold()) and _TITLE_SEP_RE.match(stripped, len(h1)):
                    return h1  # "Headline - Site" where the page's <h1> is "Headline"
        return stripped
    title = head()
    for h1 in h1s:
        if title and agrees(h1.casefold()):
            return h1
    first = h1s.first()
    if title and first:
        label = len(title.split()) <= 3 and len(first.split()) > len(title.split())
        if label or (site_name and heads[1] == site_name.casefold()):
            return first
    return title or first


class _Headings:
    """The ``<h1>`` texts, those inside ``<article>``/``<main>`` first, each read
    only when asked for (a page can have dozens: its modals' and menus').

    A trailing pilcrow is a heading's permalink (Sphinx's), not its words.
    """

    def __init__(self, nodes: list[Node]) -> None:
        inside: list[Node] = []
        outside: list[Node] = []
        for node in nodes[:_MAX_H1S]:
            ancestor = node.parent
            for _ in range(8):
                if ancestor is None or ancestor.tag in ("article", "main"):
                    break
                ancestor = ancestor.parent
            in_article = ancestor is not None and ancestor.tag in ("article", "main")
            (inside if in_article else outside).append(node)
        self._pending = iter(inside + outside)
        self._texts: list[str] = []

    def _read_to(self, index: int) -> bool:
        while len(self._texts) <= index:
            node = next(self._pending, None)
            if node is None:
                return False
            text = ws(node.text()).rstrip("¶ ")
            if text:
                self._texts.append(text)
        return True

    def first(self) -> str:
        return self._texts[0] if self._read_to(0) else ""

    def __iter__(self) -> Iterator[str]:
        index = 0
        while self._read_to(index):
            yield self._texts[index]
            index += 1


_MAX_H1S: Final = 20


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
    # Only now pay for another pass over the page.
    for node in select(tree.root, _AUTHOR_QUERY)[:4]:
        if node.tag != "meta" and (cleaned := _author_name(node)):
            return cleaned
    return None


_AUTHOR_QUERY: Final = "[itemprop~=author i], [rel~=author i], .byline, .author"


def _author_name(node: Node) -> str | None:
    name = next(iter(select(node, "[itemprop~=name i]")), None)
    return _clean_byline(ws((name or node).text()))


def _clean_byline(candidate: str | None) -> str | None:
    if not candidate or candidate.startswith(("http://", "https://")):
        return None
    cleaned = _BY_RE.sub("", candidate).strip(" ,|·–—-:")
    return cleaned if cleaned and len(cleaned) <= _MAX_BYLINE_CHARS else None


def _published_at(scan: Scan, ld: dict[str, Any]) -> str | None:
    """Publication time in ISO 8601, from the most to the least deliberate markup.

    The article's JSON-LD first (it is written for machines, and is ISO 8601
    by definition), then ``<meta>`` tags, then the page's other JSON-LD
    objects (a list of related articles has dates too), then ``<time>``
    elements. Each stamp is normalised (:func:`~readdod.text.dates.iso_8601`);
    one that cannot be read is skipped, never passed on as the page wrote it.
    """
    for key in ("datePublished", "dateCreated"):
        if (found := _ld_str(ld.get(key))) and (stamp := iso_8601(found)):
            return stamp
    for name in _DATE_METAS:
        if (found := scan.metas.get(name)) and (stamp := iso_8601(found)):
            return stamp
    for obj in scan.ld_objects:
        for key in ("datePublished", "dateCreated"):
            if (found := _ld_str(obj.get(key))) and (stamp := iso_8601(found)):
                return stamp
    for found in (scan.date_published, *scan.times):
        if found and (stamp := iso_8601(found)):
            return stamp
    return None


_DATE_METAS: Final = (
    "article:published_time", "datepublished", "date", "pubdate", "publish-date",
    "dc.date", "dcterms.created", "dc.date.issued", "parsely-pub-date", "sailthru.date",
)  # fmt: skip


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
