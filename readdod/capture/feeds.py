"""A feed's entries as readdod captures them (pure: the feed's bytes in).

RSS (0.9x, 1.0, 2.0) and Atom, read by feedparser from the bytes the daemon
fetched (never from a URL: feedparser fetches nothing here). Each entry is
known by its id (``<guid>``, Atom's ``<id>``), else by its link's canonical
form, so an entry is captured once however often the feed lists it.
"""

from __future__ import annotations

import datetime
import hashlib
import html
import io
import re
import time
import urllib.parse
from typing import Any, Final

import feedparser
import msgspec

from readdod import urls

#: Marks the capture_ids of feed entries.
CAPTURE_ID_PREFIX: Final = "feed:"


class NotAFeed(ValueError):
    """The bytes are no RSS or Atom feed; the message says what they looked like."""


class FeedEntry(msgspec.Struct, frozen=True, kw_only=True):
    #: What the entry is known by in its feed (its id, else its canonical link).
    key: str
    url: str
    title: str | None = None
    #: ISO 8601 UTC, when the feed says it was published (or last updated).
    published: str | None = None


class ParsedFeed(msgspec.Struct, frozen=True, kw_only=True):
    title: str | None
    #: Newest first when the feed dates its entries; else in the feed's order.
    entries: list[FeedEntry]
    #: Entries left out: no link to capture, or a link that is no web address.
    skipped: int = 0


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text or None


def _when(entry: Any) -> str | None:
    for key in ("published_parsed", "updated_parsed"):
        parsed = entry.get(key)
        if isinstance(parsed, time.struct_time):
            try:
                when = datetime.datetime(*parsed[:6], tzinfo=datetime.UTC)
            except ValueError:
                continue
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _link(entry: Any) -> str | None:
    """The entry's page: its ``link``, else an ``alternate`` link of its links."""
    link = _text(entry.get("link"))
    if link:
        return link
    for candidate in entry.get("links") or []:
        if candidate.get("rel", "alternate") == "alternate" and candidate.get("href"):
            return str(candidate["href"])
    return None


def parse(data: bytes, url: str) -> ParsedFeed:
    """The feed in ``data`` (fetched from ``url``, which relative links are read against)."""
    doc = feedparser.parse(
        io.BytesIO(data),
        response_headers={"content-location": url},
        sanitize_html=False,
        resolve_relative_uris=True,
    )
    if not doc.get("version") and not doc.get("entries"):
        found = discover(data, url)
        if found:
            raise NotAFeed(
                f"{url} is a web page, not a feed; it names its feed {found}:"
                f" follow that instead (`readdod feed add {found} --intent ...`)"
            )
        why = doc.get("bozo_exception")
        detail = f" ({type(why).__name__}: {why})" if why else ""
        raise NotAFeed(f"{url} is not an RSS or Atom feed{detail}")
    entries: list[FeedEntry] = []
    skipped = 0
    seen: set[str] = set()
    for entry in doc.get("entries") or []:
        link = _link(entry)
        canonical = None
        if link is not None:
            try:
                canonical = urls.canonical(link)
            except urls.BadURL:
                canonical = None
        if canonical is None or link is None:
            skipped += 1
            continue
        key = _text(entry.get("id")) or canonical
        if key in seen:
            continue
        seen.add(key)
        entries.append(
            FeedEntry(key=key, url=link, title=_text(entry.get("title")), published=_when(entry))
        )
    if entries and all(e.published for e in entries):
        entries.sort(key=lambda e: e.published or "", reverse=True)
    return ParsedFeed(
        title=_text(doc.get("feed", {}).get("title")), entries=entries, skipped=skipped
    )


_LINK_RE: Final = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_ATTR_RE: Final = re.compile(
    rb"""([a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE
)
_FEED_TYPES: Final = frozenset({b"application/rss+xml", b"application/atom+xml"})


def discover(data: bytes, url: str) -> str | None:
    """The feed a web page names in its ``<link rel="alternate" type="application/rss+xml">``
    (or Atom), as an absolute address; None when it names none."""
    for tag in _LINK_RE.findall(data[: 256 * 1024]):
        attrs = {
            m.group(1).lower(): (m.group(2) or m.group(3) or m.group(4) or b"")
            for m in _ATTR_RE.finditer(tag)
        }
        rel = attrs.get(b"rel", b"").lower().split()
        if b"alternate" in rel and attrs.get(b"type", b"").lower() in _FEED_TYPES:
            href = attrs.get(b"href", b"").decode("utf-8", "replace").strip()
            if href:
                return urllib.parse.urljoin(url, html.unescape(href))
    return None


def capture_id(feed_id: str, key: str) -> str:
    """The capture_id of an entry: the feed and the entry's key, hashed to a bounded size."""
    digest = hashlib.sha256(f"{feed_id}\x00{key}".encode()).hexdigest()[:32]
    return f"{CAPTURE_ID_PREFIX}{digest}"
