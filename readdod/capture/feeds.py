"""A feed's entries as readdod captures them (pure: the feed's bytes in).

RSS (0.9x, 1.0, 2.0) and Atom, read by feedparser from the bytes the daemon
fetched (never from a URL: feedparser fetches nothing here), with the
response's Content-Type (its charset decides how bytes without an encoding
declaration read); JSON Feed (1.0, 1.1) read with msgspec.

Each entry is known by its id (``<guid>``, Atom's ``<id>``, JSON Feed's
``id``), else by its enclosure (a podcast episode's audio), else by its
link's canonical form, so an entry is captured once however often the feed
lists it. An entry whose link it shares with other entries (podcasts often
link every episode to the show's page) is marked ``shared_link``: the page
behind the link is not the entry, so the entry is captured with its own
content (:func:`entry_html`).

A poll's cost is bounded before feedparser sees the document: only the first
``max_entries`` entries in the document's order are read (:func:`first_entries`
cuts the rest out of the bytes), so a 100,000-entry feed costs what a
``max_entries`` one does.
"""

from __future__ import annotations

import datetime
import hashlib
import html
import io
import re
import time
import urllib.parse
from collections import Counter
from typing import Any, Final

import feedparser
import msgspec

from readdod.items import urls

#: Marks the capture_ids of feed entries.
CAPTURE_ID_PREFIX: Final = "feed:"
#: Entries read from one document unless the caller says otherwise.
MAX_ENTRIES: Final = 500
#: An entry's own content kept for its capture, in characters.
CONTENT_MAX: Final = 200_000
#: A key longer than this is kept as its hash.
KEY_MAX: Final = 512
#: The types of ``<link rel="alternate">`` that name a feed.
FEED_TYPES: Final = frozenset(
    {b"application/rss+xml", b"application/atom+xml", b"application/feed+json"}
)


class NotAFeed(ValueError):
    """The bytes are no RSS, Atom or JSON feed; the message says what they looked like.
    ``found``: the feed a web page names, when it names one."""

    def __init__(self, message: str, found: str | None = None) -> None:
        super().__init__(message)
        self.found = found


class FeedEntry(msgspec.Struct, frozen=True, kw_only=True):
    #: What the entry is known by in its feed: its id, else its enclosure, else its link.
    key: str
    url: str
    title: str | None = None
    #: ISO 8601 UTC, when the feed says it was published (or last updated).
    published: str | None = None
    #: The entry's own content (HTML), as the feed gives it, at most CONTENT_MAX characters.
    content: str | None = None
    #: The entry's first enclosure (a podcast episode's audio), if any.
    enclosure: str | None = None
    #: Other entries of the feed link to the same page, or the link is the feed's own
    #: home: the page is not this entry, so its own content is captured.
    shared_link: bool = False
    #: The key an earlier readdod knew an entry without id by (its canonical link), when
    #: it is keyed by its enclosure now and its link is its own: seen under either, the
    #: entry is not captured again.
    legacy_key: str | None = None


class ParsedFeed(msgspec.Struct, frozen=True, kw_only=True):
    title: str | None
    #: Newest first when the feed dates its entries; else in the feed's order.
    entries: list[FeedEntry]
    #: Entries left out: no link to capture, or a link that is no web address.
    skipped: int = 0
    #: The document held more entries than were read (``max_entries``); the rest were cut.
    cut: bool = False


class _Raw(msgspec.Struct, frozen=True, kw_only=True):
    """An entry as either format gives it, before it is keyed."""

    guid: str | None
    link: str | None
    title: str | None
    published: str | None
    content: str | None
    enclosure: str | None


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


def _enclosure(entry: Any) -> str | None:
    for candidate in entry.get("enclosures") or []:
        href = _text(candidate.get("href"))
        if href:
            return href
    return None


def _as_html(value: Any, kind: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text: str = value
    if kind == "text/plain":
        text = "".join(f"<p>{html.escape(p)}</p>" for p in text.split("\n\n") if p.strip())
    return text[:CONTENT_MAX]


def _content(entry: Any) -> str | None:
    """The entry's own words: its full content (``content:encoded``, Atom's content),
    else its summary (RSS's description)."""
    for part in entry.get("content") or []:
        got = _as_html(part.get("value"), part.get("type"))
        if got:
            return got
    detail = entry.get("summary_detail") or {}
    return _as_html(entry.get("summary"), detail.get("type"))


_ENTRY_START: Final = re.compile(
    # CDATA sections and comments are stepped over whole (or to the end, when never closed:
    # one pass over the bytes whatever they hold), so a tag inside one is no entry.
    rb"<!\[CDATA\[.*?(?:\]\]>|\Z)|<!--.*?(?:-->|\Z)"
    rb"|(<(?:[A-Za-z_][\w.-]*:)?(?:item|entry)(?=[\s/>]))",
    re.DOTALL,
)
_ENTRY_END: Final = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?(?:item|entry)\s*>")


def first_entries(data: bytes, limit: int) -> tuple[bytes, bool]:
    """``data`` with every entry after the first ``limit`` cut out, and whether any was.

    The entries after the cut are removed as one byte range, from the start tag of
    entry ``limit + 1`` to the end tag of the last entry, so what closes the document
    stays and the XML stays well-formed; a document this cannot cut cleanly still
    reads (feedparser's lenient parser) and is still no longer than the first
    ``limit`` entries and what follows the last.
    """
    count = 0
    cut = -1
    for m in _ENTRY_START.finditer(data):
        if m.group(1) is None:
            continue
        count += 1
        if count > limit:
            cut = m.start()
            break
    if cut < 0:
        return data, False
    last_end = -1
    for m in _ENTRY_END.finditer(data, cut):
        last_end = m.end()
    tail = data[last_end:] if last_end > cut else b""
    return data[:cut] + tail, True


def _xml_entries(
    data: bytes, url: str, content_type: str | None, limit: int
) -> tuple[str | None, str | None, list[_Raw], bool]:
    body, cut = first_entries(data, limit)
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    doc = feedparser.parse(
        io.BytesIO(body),
        response_headers=headers,
        sanitize_html=False,
        resolve_relative_uris=True,
    )
    if not doc.get("version") and not doc.get("entries"):
        found = discover(data, url)
        if found:
            raise NotAFeed(
                f"{url} is a web page, not a feed; it names its feed {found}:"
                f" follow that instead (`readdod feed add {found} --intent ...`)",
                found,
            )
        why = doc.get("bozo_exception")
        detail = f" ({type(why).__name__}: {why})" if why else ""
        raise NotAFeed(f"{url} is not an RSS, Atom or JSON feed{detail}")
    raws = [
        _Raw(
            guid=_text(entry.get("id")),
            link=_link(entry),
            title=_text(entry.get("title")),
            published=_when(entry),
            content=_content(entry),
            enclosure=_enclosure(entry),
        )
        for entry in (doc.get("entries") or [])[:limit]
    ]
    feed = doc.get("feed", {})
    return _text(feed.get("title")), _text(feed.get("link")), raws, cut


# --- JSON Feed (https://www.jsonfeed.org/version/1.1/) -----------------------------------


class _JsonAttachment(msgspec.Struct):
    url: str | None = None


class _JsonItem(msgspec.Struct):
    id: str | int | float | None = None
    url: str | None = None
    external_url: str | None = None
    title: str | None = None
    content_html: str | None = None
    content_text: str | None = None
    summary: str | None = None
    date_published: str | None = None
    date_modified: str | None = None
    attachments: list[_JsonAttachment] | None = None


class _JsonFeed(msgspec.Struct):
    version: str
    title: str | None = None
    home_page_url: str | None = None
    #: Left raw: only the first ``limit`` are decoded.
    items: list[msgspec.Raw] = []


def _iso(value: str | None) -> str | None:
    if not value:
        return None
    try:
        when = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json_entries(
    data: bytes, url: str, limit: int
) -> tuple[str | None, str | None, list[_Raw], bool]:
    try:
        doc = msgspec.json.decode(data, type=_JsonFeed)
    except msgspec.MsgspecError as exc:
        raise NotAFeed(f"{url} is not an RSS, Atom or JSON feed (JSON: {exc})") from None
    if "jsonfeed.org/version/" not in doc.version:
        raise NotAFeed(f"{url} is JSON but no JSON Feed (version {doc.version[:80]!r})")
    raws = []
    for raw in doc.items[:limit]:
        try:
            item = msgspec.json.decode(raw, type=_JsonItem)
        except msgspec.MsgspecError:
            continue
        content = _as_html(item.content_html, "text/html") or _as_html(
            item.content_text or item.summary, "text/plain"
        )
        attachments = [a.url for a in item.attachments or [] if a.url]
        raws.append(
            _Raw(
                guid=None if item.id is None else _text(str(item.id)),
                link=_text(item.url) or _text(item.external_url),
                title=_text(item.title),
                published=_iso(item.date_published) or _iso(item.date_modified),
                content=content,
                enclosure=attachments[0] if attachments else None,
            )
        )
    return _text(doc.title), _text(doc.home_page_url), raws, len(doc.items) > limit


def _is_json(data: bytes, content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    if media in ("application/feed+json", "application/json"):
        return True
    return data.lstrip()[:1] == b"{"


def _canonical(link: str | None, base: str) -> str | None:
    if not link:
        return None
    try:
        return urls.canonical(urllib.parse.urljoin(base, link))
    except urls.BadURL:
        return None


def _key(value: str) -> str:
    if len(value) <= KEY_MAX:
        return value
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()


def parse(
    data: bytes, url: str, *, content_type: str | None = None, max_entries: int = MAX_ENTRIES
) -> ParsedFeed:
    """The feed in ``data`` (fetched from ``url``, which relative links are read against,
    with the response's ``content_type``); its first ``max_entries`` entries only."""
    limit = max(1, max_entries)
    if _is_json(data, content_type):
        title, home, raws, cut = _json_entries(data, url, limit)
    else:
        title, home, raws, cut = _xml_entries(data, url, content_type, limit)
    entries: list[FeedEntry] = []
    links: list[str] = []
    skipped = 0
    seen: set[str] = set()
    for raw in raws:
        canonical = _canonical(raw.link, url)
        if canonical is None or raw.link is None:
            skipped += 1
            continue
        enclosure = _canonical(raw.enclosure, url)
        key = _key(raw.guid or enclosure or canonical)
        if key in seen:
            continue
        seen.add(key)
        links.append(canonical)
        entries.append(
            FeedEntry(
                key=key,
                url=urllib.parse.urljoin(url, raw.link),
                title=raw.title,
                published=raw.published,
                content=raw.content,
                enclosure=enclosure,
            )
        )
    homes = {h for h in (_canonical(home, url), _canonical(url, url)) if h}
    counts = Counter(links)
    entries = [
        msgspec.structs.replace(e, shared_link=True)
        if counts[link] > 1 or link in homes
        else msgspec.structs.replace(e, legacy_key=link)
        if e.key != link and e.key == e.enclosure
        else e
        for e, link in zip(entries, links, strict=True)
    ]
    if entries and all(e.published for e in entries):
        entries.sort(key=lambda e: e.published or "", reverse=True)
    return ParsedFeed(title=title, entries=entries, skipped=skipped, cut=cut)


def entry_html(entry: FeedEntry, feed_title: str | None = None) -> str:
    """The entry as a small page of its own: its title, date, content and enclosure.
    What is captured for an entry whose link is not its own page."""
    esc = html.escape
    title = entry.title or feed_title or entry.url
    parts = [
        '<!doctype html><html><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title></head><body><article><h1>{esc(title)}</h1>",
    ]
    if entry.published:
        parts.append(
            f'<p><time datetime="{esc(entry.published)}">{esc(entry.published)}</time></p>'
        )
    if entry.content:
        parts.append(f"<div>{entry.content}</div>")
    if entry.enclosure:
        parts.append(f'<p><a href="{esc(entry.enclosure)}">{esc(entry.enclosure)}</a></p>')
    parts.append("</article></body></html>")
    return "".join(parts)


_LINK_RE: Final = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_ATTR_RE: Final = re.compile(
    rb"""([a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE
)


def discover(data: bytes, url: str) -> str | None:
    """The feed a web page names in its ``<link rel="alternate">`` of an RSS, Atom or
    JSON Feed type, as an absolute address; None when it names none."""
    for tag in _LINK_RE.findall(data[: 256 * 1024]):
        attrs = {
            m.group(1).lower(): (m.group(2) or m.group(3) or m.group(4) or b"")
            for m in _ATTR_RE.finditer(tag)
        }
        rel = attrs.get(b"rel", b"").lower().split()
        kind = attrs.get(b"type", b"").lower().split(b";")[0].strip()
        if b"alternate" in rel and kind in FEED_TYPES:
            href = attrs.get(b"href", b"").decode("utf-8", "replace").strip()
            if href:
                return urllib.parse.urljoin(url, html.unescape(href))
    return None


def capture_id(feed_id: str, key: str) -> str:
    """The capture_id of an entry: the feed and the entry's key, hashed to a bounded size."""
    digest = hashlib.sha256(f"{feed_id}\x00{key}".encode()).hexdigest()[:32]
    return f"{CAPTURE_ID_PREFIX}{digest}"
