"""Which elements are chrome or boilerplate rather than the article.

Chrome is what a site wraps around every article (nav, header, footer, aside,
forms, ARIA landmarks other than main, hidden elements); boilerplate is what
class and id names call out as not prose (ads, share bars, comments, related
links, bylines, captions). The vocabulary is that of class and id names, not
of page text, so pages in any language are judged the same way. Content
scoring asks :class:`Boilerplate` which ancestors disqualify a paragraph;
:func:`prune` then clears the chosen container.
"""

from __future__ import annotations

import re
from typing import Final

from readdod.extraction.dom import (
    Node,
    has_match,
    is_block,
    link_density,
    node_text_len,
    nonspace_len,
)

# Never article text, wherever they sit.
_NEVER_TEXT: Final = (
    "script, style, noscript, template, svg, iframe, button, object, embed, dialog, "
    "select, textarea, input, canvas, map, audio, video, figcaption"
)
_NEVER_TEXT_TAGS: Final = frozenset(_NEVER_TEXT.split(", "))
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

# --- class/id vocabulary -----------------------------------------------------
_NEGATIVE_WORDS: Final = (
    r"ads?|advert\w*|banner|combx|comment\w*|com|contact|footer|footnote"
    r"|masthead|media|meta|nav\w*|newsletter|outbrain|promo\w*|related|scroll|share\w*"
    r"|shoutbox|sidebar|skyscraper|sponsor\w*|shopping|social|subscribe\w*|tags?|tool\w*"
    r"|widget\w*|teaser\w*|recirc\w*|trending|popular|most"
)
_POSITIVE_WORDS: Final = r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story"
# Token-bounded so that "header" or "shadow" never reads as "ad".
_NEGATIVE_RE: Final = re.compile(rf"(?:^|[\s_-])(?:{_NEGATIVE_WORDS})(?=$|[\s_-])", re.IGNORECASE)
_POSITIVE_RE: Final = re.compile(_POSITIVE_WORDS, re.IGNORECASE)
# The same, for an ASCII name once lowercased: a case-sensitive pattern that
# opens with its words lets the regex engine skip to where a word can start,
# where IGNORECASE tries every alternative at every character (a few times
# faster; other scripts keep the patterns above, whose case folding differs).
_NEGATIVE_LOW_RE: Final = re.compile(rf"(?<![^\s_-])(?:{_NEGATIVE_WORDS})(?![^\s_-])")
_POSITIVE_LOW_RE: Final = re.compile(_POSITIVE_WORDS)
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


# Elements inside the container that pruning looks at.
_PRUNE_TAGS: Final = frozenset(
    {"div", "section", "ul", "ol", "table", "dl", "details", "p", "span", "aside", "figure",
     "time"}
)  # fmt: skip
# Microdata that marks an element as metadata about the article.
_META_ITEMPROPS: Final = frozenset(
    {"datepublished", "datemodified", "datecreated", "author", "creator", "publisher"}
)
_LINK_LIST_DENSITY: Final = 0.5
# Nodes a page may have read around the nodes judged against its body, before the
# body's text is read whole.
_NODES_READ: Final = 500
_DATE_LINE_EXTRA_CHARS: Final = 30  # "Published on", "Updated:", a time zone


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
        if verdict & _JUNK and _is_positive(low):
            verdict &= ~_JUNK
    cache[names] = verdict
    return verdict


def _decompose_reversed(nodes: list[Node]) -> None:
    """Remove nodes given in document order.

    Going backwards frees descendants before their ancestors, so no node is
    touched after an ancestor's removal freed it.
    """
    for node in reversed(nodes):
        node.decompose()


class Boilerplate:
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
        self._total = -1  # the body's text length, once read whole
        self._reads = 0  # nodes read around nodes judged against the body

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
            # Article markup kept from the name rules, unless hidden: a copy
            # in display:none microdata is for crawlers, not readers.
            style = (attrs if attrs is not None else node.attributes).get("style") or ""
            return "display:none" in style.replace(" ", "").lower()
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
                if not self.names(attrs, node) & _UNLIKELY:
                    return False
                if _is_embed(node):
                    return False
        text = node.text()
        # A comment thread can outweigh a short post, so a node named as
        # boilerplate escapes only as a page-wide wrapper.
        return not (
            len(text) > 2000
            and has_match(node, "p")
            and link_density(node, len(text)) < 0.5
            and self._holds_most(node, nonspace_len(text), 0.5 if chrome else 0.8)
        )

    def _holds_most(self, node: Node, chars: int, share: float) -> bool:
        """Whether ``chars``, the text of ``node``, is more than ``share`` of the body's.

        The rest of the body is read sibling by sibling up from ``node``, and
        only until it is clearly too much: a page's whole text is long (its
        scripts' included), the rest around a page-wide wrapper short. Once a
        page has had ``_NODES_READ`` nodes read so (deep or crowded markup),
        the body's text is read whole instead, and only once.
        """
        if self._total >= 0:
            return chars > self._total * share
        total = chars
        body_id = self.body.mem_id
        while node.mem_id != body_id:
            parent = node.parent
            if parent is None:
                break
            own = node.mem_id
            for sibling in parent.iter(include_text=True):
                if sibling.mem_id != own:
                    total += nonspace_len(sibling.text())
                    if chars <= total * share:
                        return False
                self._reads += 1
                if self._reads > _NODES_READ:
                    self._total = node_text_len(self.body)
                    return chars > self._total * share
            node = parent
        return chars > total * share

    def names(self, attrs: dict[str, str | None], node: Node) -> int:
        """Verdict bits of the element's class and id.

        An id made from the element's own heading (``id="sharing-with-a-
        single-developer"`` on a documentation section titled "Sharing with
        a single developer") is the author's words, not the site's vocabulary.
        """
        ident = attrs.get("id") or ""
        names = f"{attrs.get('class') or ''} {ident}"
        if len(names) <= 1:
            return 0
        verdict = _names(names, self.verdicts)
        if verdict and ident and _is_heading_slug(ident, node):
            verdict = _names(attrs.get("class") or "", self.verdicts)
        return verdict


_SLUG_SPLIT_RE: Final = re.compile(r"[\W_]+")


def _is_heading_slug(ident: str, node: Node) -> bool:
    """Whether ``ident`` is the slug of the heading that opens ``node``."""
    words = [w for w in _SLUG_SPLIT_RE.split(ident.casefold()) if w]
    if len(words) < 2:
        return False
    child = node.first_child
    while child is not None and not child.is_element_node:
        child = child.next
    if child is None or child.tag not in ("h1", "h2", "h3", "h4", "h5", "h6"):
        return False
    heading = set(_SLUG_SPLIT_RE.split(child.text().casefold()))
    return all(word in heading or word.isdigit() for word in words)


def _is_embed(node: Node) -> bool:
    """A wrapper around an embedded post (a quoted tweet or toot is article text)."""
    child = node.first_child
    while child is not None and not child.is_element_node:
        child = child.next
    return (
        child is not None
        and child.tag == "blockquote"
        and has_match(child, "p")
        and link_density(child) < 0.5
    )


def class_weight(node: Node) -> float:
    weight = 0.0
    attrs = node.attributes
    for value in (attrs.get("class"), attrs.get("id")):
        if not value:
            continue
        if _is_negative(value):
            weight -= 25
        if _is_positive(value):
            weight += 25
    return weight


def _is_negative(value: str) -> bool:
    if value.isascii():
        return _NEGATIVE_LOW_RE.search(value.lower()) is not None
    return _NEGATIVE_RE.search(value) is not None


def _is_positive(value: str) -> bool:
    if value.isascii():
        return _POSITIVE_LOW_RE.search(value.lower()) is not None
    return _POSITIVE_RE.search(value) is not None


def prune(container: Node, judge: Boilerplate) -> None:
    """Remove what sits inside the article but is not of it.

    Chrome and hidden elements; share bars, captions, bylines, related links
    and comments by class/id (a wrapper around an embedded post stays);
    figures (their text is captions); date lines and author/date microdata;
    rel=tag links; lists and blocks that are mostly links.
    """
    nodes = list(container.traverse())
    tags: list[str | None] = [node.tag for node in nodes]
    cid = container.mem_id
    linked = _link_chars(nodes, tags, cid)
    total = node_text_len(container)
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


def _link_chars(nodes: list[Node], tags: list[str | None], cid: int) -> dict[int, int]:
    """Characters of link text inside each element, by key, up to the container ``cid``.

    One walk: the links' text is credited to their ancestors, since the
    elements are judged by it (a css("a") query would be a second walk). Each
    link credits its parent; the sums then flow up once per ancestor, not
    once per link and ancestor (menus hold hundreds of links, deep down).
    """
    linked: dict[int, int] = {}
    up: dict[int, int | None] = {}  # an ancestor of a link -> its parent, None above cid
    order: list[int] = []  # those ancestors, each after its own ancestors
    for link, tag in zip(nodes, tags, strict=True):
        if tag != "a":
            continue
        chars = nonspace_len(link.text())
        node = link.parent
        if not chars or node is None:
            continue
        key = node.mem_id
        linked[key] = linked.get(key, 0) + chars
        path: list[int] = []
        while key not in up:
            path.append(key)
            parent = None if key == cid else node.parent
            if parent is None:
                up[key] = None
                break
            node, up[key] = parent, parent.mem_id
            key = up[key]
        order.extend(reversed(path))
    for key in reversed(order):
        parent_key = up[key]
        if parent_key is not None:
            linked[parent_key] = linked.get(parent_key, 0) + linked[key]
    return linked


def _is_junk(node: Node, tag: str, judge: Boilerplate, links: int, total: int) -> bool:
    """Whether an element of the container is about the article, not of it.

    ``links``: characters of link text inside; ``total``: the container's.
    """
    if tag == "figure":
        return not has_match(node, "blockquote, table, pre")
    if tag == "time":
        return _is_date_line(node)
    attrs = node.attributes
    if attrs or tag in _CHROME_TAGS:  # a bare element is never boilerplate
        if judge.is_bad(node, attrs):
            return True
        if (attrs.get("itemprop") or "").lower() in _META_ITEMPROPS:
            return True
        junk = judge.names(attrs, node) & _JUNK
        if junk and node_text_len(node) < total / 2 and not _is_embed(node):
            return True
    # A node's text holds its links' text: with links >= total / 3 it
    # cannot be a short link list, so its length is not worth reading.
    if links and links < total / 3 and tag in ("div", "section", "ul", "ol", "table", "dl", "p"):
        length = node_text_len(node)
        return bool(length) and links / length > _LINK_LIST_DENSITY and length < total / 3
    return False


def _is_date_line(node: Node) -> bool:
    """A ``<time>`` that is (nearly) all of its block is metadata, not a sentence."""
    block = node.parent
    while block is not None and not is_block(block.tag):
        block = block.parent
    if block is None:
        return False
    return nonspace_len(block.text()) < nonspace_len(node.text()) + _DATE_LINE_EXTRA_CHARS
