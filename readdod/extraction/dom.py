"""Node, text and link helpers that every stage of extraction shares.

Metadata, boilerplate judgement, content scoring and Markdown rendering all
measure nodes, collapse whitespace and resolve links; doing it with one set
of primitives means a page is measured the same way wherever it is judged,
and the cheap forms (counting characters instead of splitting, substring
tests instead of regex scans) are written once.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from selectolax.lexbor import LexborCSSSelector, LexborDocumentOptions, LexborHTMLParser

# selectolax ships no type stubs; name the node type for readers.
Node = Any

BLOCK_TAGS: Final = frozenset(
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
SKIP_TAGS: Final = frozenset(
    {
        "area", "audio", "canvas", "embed", "figcaption", "head", "hr", "img",
        "input", "link", "map", "meta", "object", "option", "picture", "select",
        "source", "textarea", "title", "track", "video", "script", "style",
        "noscript", "template", "svg", "iframe", "button",
    }
)  # fmt: skip
HEADINGS: Final = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}

# Marks a <br> while a block's text is gathered (a line separator, so that
# collapsing whitespace inside a line cannot mistake it for a newline).
BR: Final = "\u2028"
INVISIBLE: Final = "\u200b\u2060\ufeff\u00ad"
INVISIBLE_RE: Final = re.compile(f"[{INVISIBLE}]")


def node_text_len(node: Node) -> int:
    """Characters of text, whitespace not counted (cheap, comparable across nodes)."""
    return nonspace_len(node.text())


def nonspace_len(text: str) -> int:
    """Length without the usual whitespace (counting beats splitting on long texts).

    ``str.count`` visits every character, ``in`` skips ahead with ``memchr``:
    the rarer characters are counted only when they are there (a carriage
    return never is after parsing, a tab or no-break space seldom).
    """
    chars = len(text) - text.count(" ") - text.count("\n")
    if "\t" in text:
        chars -= text.count("\t")
    if "\r" in text:
        chars -= text.count("\r")
    if not text.isascii() and "\xa0" in text:
        chars -= text.count("\xa0")
    return chars


def link_density(node: Node, total: int = -1) -> float:
    """Share of the text inside links (raw lengths: both sides carry the same spacing).

    ``total``: the length of the node's text, if the caller has it already.
    """
    if total < 0:
        total = len(node.text())
    if total == 0:
        return 0.0
    linked = sum(len(link.text()) for link in select(node, "a"))
    return min(linked / total, 1.0)


def parse(html: str) -> Node:
    """The page's tree, without lexbor's mutation events.

    The events apply the standard's side effects after parsing (a
    ``<selectedcontent>`` mirroring its chosen option); an extractor wants
    the tree as written, and building it without them is a little faster.
    """
    return LexborHTMLParser(html, options=LexborDocumentOptions.WO_EVENTS)


class _Engine(threading.local):
    """One CSS selector engine per thread, for every page.

    A parsed page makes its own engine on its first query, and setting one
    up costs more than most queries take to run.
    """

    def __init__(self) -> None:
        self.selector = LexborCSSSelector()  # type: ignore[no-untyped-call]  # untyped in the library


_ENGINE: Final = _Engine()


def select(node: Node, query: str) -> list[Node]:
    """The elements matching ``query`` in ``node``'s subtree, ``node`` included, in
    document order."""
    found: list[Node] = _ENGINE.selector.find(query, node)
    return found


def has_match(node: Node, query: str) -> bool:
    """Whether anything in ``node``'s subtree, ``node`` included, matches ``query``."""
    return bool(_ENGINE.selector.any_matches(query, node))


def find_inside(node: Node, selector: str) -> Node | None:
    """First match strictly inside ``node`` (a query also matches the node itself)."""
    for match in select(node, selector):
        if match.mem_id != node.mem_id:
            return match
    return None


def is_block(tag: str) -> bool:
    # Custom elements (<x-paragraph>) are treated as blocks: joining them
    # inline would glue separate paragraphs together.
    return tag in BLOCK_TAGS or "-" in tag


def absolute_url(base: str | None, href: str | None) -> str | None:
    """``href`` as an absolute http(s) URL, or None if it cannot be one."""
    url = resolve_url(base, href)
    return url if url and url.startswith(("https://", "http://")) else None


def resolve_url(base: str | None, href: str | None) -> str | None:
    if not href or not href.strip():
        return None
    href = href.strip()
    if not base or href.startswith(("https://", "http://")):
        return href
    if href[:1] == "/" and _is_plain_path(href) and (origin := _origin(base)):
        return origin + href  # what urljoin gives, without parsing both again
    return urljoin(base, href)


def _is_plain_path(href: str) -> bool:
    """Whether ``href`` is a root-relative path that urljoin would keep as written.

    It drops empty segments (``//``), resolves dot segments, and drops a
    ``?``, ``#`` or ``;`` with nothing after it; such paths go through it.
    """
    return (
        "//" not in href
        and "/." not in href
        and "?" not in href
        and "#" not in href
        and ";" not in href
        and href.isprintable()
    )


@functools.lru_cache(maxsize=64)
def _origin(base: str) -> str | None:
    """``scheme://host`` of an http(s) ``base``, as urljoin would write it; else None."""
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def link_target(base: str | None, href: str | None) -> str | None:
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
        target = resolve_url(base, href)
    return target.replace(" ", "%20").replace(")", "%29") if target else None


def ws(text: str | None) -> str:
    """Whitespace runs become one space (newlines included), none at the ends."""
    if not text or is_collapsed(text):
        return text or ""
    if is_collapsed(stripped := text.strip()):
        return stripped  # the usual case: a text node's or a block's indentation
    if has_invisible(text):
        text = INVISIBLE_RE.sub("", text)
    return " ".join(text.split())


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds one of ``INVISIBLE``.

    Plain substring tests: much cheaper than a regex scan of a long text (and
    immediate when the text's storage cannot hold such characters at all).
    """
    return not text.isascii() and (
        "\u00ad" in text or "\u200b" in text or "\u2060" in text or "\ufeff" in text
    )


def is_collapsed(text: str) -> bool:
    """Whether ``text`` is already words between single spaces, on one line.

    Most texts of a page are, and splitting and joining one costs ten times
    this test. ``isprintable`` is False for every whitespace character but
    the ASCII space, for ``BR`` and for the ``INVISIBLE`` ones; it looks each
    character up, so a long ASCII text is searched instead for the only
    whitespace it can hold (``in`` skips through with ``memchr``). Either way
    the answer is whether :func:`ws` would leave ``text`` as it is.
    """
    if "  " in text or text[:1] == " " or text[-1:] == " ":
        return False
    if len(text) > _LONG_TEXT and text.isascii():
        return not (
            "\n" in text
            or "\t" in text
            or "\r" in text
            or "\x0b" in text
            or "\x0c" in text
            or "\x1c" in text
            or "\x1d" in text
            or "\x1e" in text
            or "\x1f" in text
        )
    return text.isprintable()


_LONG_TEXT: Final = 64  # characters past which nine searches beat one lookup each


def clean_lines(text: str) -> str:
    """Normalise a block: collapse whitespace, one line per ``<br>``, no empty lines."""
    if BR not in text:
        return ws(text)
    if has_invisible(text):
        text = INVISIBLE_RE.sub("", text)
    lines = (" ".join(line.split()) for line in text.split(BR))
    return "\n".join(line for line in lines if line)


def fold(text: str) -> str:
    return ws(text).casefold()
