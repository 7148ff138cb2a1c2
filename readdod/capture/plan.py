"""An import's plan: each entry an export holds turned into a capture request (pure).

The capture_id is derived from what the entry is (its canonical URL, or its
text), so importing the same file again, or another export holding the same
link, adds nothing, and an import cut short is resumed by running it again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

import msgspec

from readdod.capture.formats import Entry, Problem, Skipped
from readdod.items import urls

#: Marks the capture_ids an import makes.
CAPTURE_ID_PREFIX: Final = "import:"
#: The bounds a capture takes (see :class:`readdod.items.models.CaptureRequest`).
INTENT_MAX: Final = 2_000
TITLE_MAX: Final = 500
TAG_MAX: Final = 100
TAGS_MAX: Final = 50
NOTE_MAX: Final = 10_000
#: Priority of imported items unless told: years of saved links wait behind today's captures.
DEFAULT_PRIORITY: Final = "P3"


#: The tag a starred (favourite, liked) entry gets, so ``ls --tag starred`` finds it.
STARRED_TAG: Final = "starred"
#: Highlights kept per entry.
HIGHLIGHTS_MAX: Final = 200
#: What services store when their own fetch failed: no article, the link is fetched.
PLACEHOLDERS: Final = frozenset(
    {
        "no title found",
        "oh, what a shame, no content",
        "oh, what a shame, no content.",
        "no content",
        "untitled",
    }
)
#: Kept content with fewer words than this is no article (a teaser, an error page):
#: the link is fetched instead.
MIN_CONTENT_WORDS: Final = 30
_TAG = re.compile(r"<[^>]*>|&[#\w]+;")
_WORD = re.compile(r"\w+")


class Options(msgspec.Struct, frozen=True, kw_only=True):
    fmt: str
    intent: str | None = None
    tags: tuple[str, ...] = ()
    priority: str = DEFAULT_PRIORITY
    #: Larger pages handed in by an export are dropped; the link is fetched instead.
    max_html_bytes: int = 10 * 2**20
    #: Process what the person had archived, instead of bringing it in ARCHIVED.
    process_archived: bool = False


class Planned(msgspec.Struct, frozen=True):
    """One capture to send: its line in the file and the ``capture`` params."""

    line: int
    params: dict[str, Any]
    archived: bool = False
    starred: bool = False
    highlights: int = 0

    @property
    def needs_intent(self) -> bool:
        return "intent" not in self.params


class Merge(msgspec.Struct):
    """What the later copies of a link add to its first: tags, an earlier date, a star."""

    tags: tuple[str, ...] = ()
    saved_at: str | None = None
    starred: bool = False
    unread: bool = False
    highlights: tuple[str, ...] = ()


class Census(msgspec.Struct):
    """A first pass over the file: how many entries, which are repeats of an earlier one
    (by position), what the repeats add to the first, and how many lack an intent.

    It keeps 16 bytes of identity per entry (the capture_id, which the second pass
    then need not work out again) and a set of 8-byte keys, so a file of a million
    links is counted in a few tens of MB."""

    entries: int = 0
    ids: bytearray = msgspec.field(default_factory=bytearray)
    needs_intent: int = 0
    repeats: set[int] = msgspec.field(default_factory=set)
    merged: dict[int, Merge] = msgspec.field(default_factory=dict)


_NO_ID: Final = bytes(16)


def _known_id(counted: Census | None, position: int, item: Entry) -> str | None:
    """The entry's capture_id, as the census worked it out when it did."""
    if counted is not None:
        raw = bytes(counted.ids[16 * position : 16 * position + 16])
        if len(raw) == 16 and raw != _NO_ID:
            return CAPTURE_ID_PREFIX + raw.hex()
    return capture_id(item)


def _key(cid: str) -> int:
    return int(cid[-16:], 16)


def census(found: Iterable[Entry | Problem | Skipped], opts: Options) -> Census:
    """Count the file and find its repeated links (see :class:`Census`)."""
    c = Census()
    seen: set[int] = set()
    for position, item in enumerate(found):
        c.entries += 1
        cid = capture_id(item) if isinstance(item, Entry) else None
        c.ids += _NO_ID if cid is None else bytes.fromhex(cid[len(CAPTURE_ID_PREFIX) :])
        if cid is None or not isinstance(item, Entry):
            continue
        key = _key(cid)
        if key in seen:
            c.repeats.add(position)
            m = c.merged.setdefault(key, Merge())
            m.tags = (*m.tags, *item.tags, *_folder_tag(item))
            if item.saved_at and (m.saved_at is None or item.saved_at < m.saved_at):
                m.saved_at = item.saved_at
            m.starred = m.starred or item.starred
            m.unread = m.unread or not item.archived
            m.highlights = (*m.highlights, *item.highlights)[:HIGHLIGHTS_MAX]
            continue
        seen.add(key)
        if not opts.intent and not item.note and not item.highlights:
            c.needs_intent += 1
    del seen
    return c


def is_placeholder(html: str) -> bool:
    """Content a service stored when its own fetch failed, or too short to be the article."""
    text = " ".join(_TAG.sub(" ", html).split())
    if text.lower().rstrip(".!") in {p.rstrip(".!") for p in PLACEHOLDERS}:
        return True
    return len(_WORD.findall(text, 0, 20_000)) < MIN_CONTENT_WORDS


def _folder_tag(entry: Entry) -> tuple[str, ...]:
    """The folder path as one tag (``Cooking/Bread``)."""
    if not entry.folder:
        return ()
    return ("/".join(f.replace("/", "-") for f in entry.folder),)


def _merge(entry: Entry, m: Merge | None) -> Entry:
    if m is None:
        return entry
    earliest = entry.saved_at
    if m.saved_at and (earliest is None or m.saved_at < earliest):
        earliest = m.saved_at
    return msgspec.structs.replace(
        entry,
        tags=(*entry.tags, *_folder_tag(entry), *m.tags),
        folder=(),
        saved_at=earliest,
        starred=entry.starred or m.starred,
        archived=entry.archived and not m.unread,
        highlights=(*entry.highlights, *m.highlights)[:HIGHLIGHTS_MAX],
    )


def capture_id(entry: Entry) -> str | None:
    """The entry's identity: its canonical URL or its text; None for a URL that is no
    http(s) address (refused before it is sent)."""
    if entry.url is not None:
        try:
            key = "url\x00" + urls.canonical(entry.url)
        except urls.BadURL:
            return None
    else:
        key = "text\x00" + (entry.text or "")
    return CAPTURE_ID_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:32]


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at a word when it must be cut."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip() + "…"


def _tags(entry: Entry, extra: tuple[str, ...]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in (*entry.tags, *extra):
        name = tag.strip()[:TAG_MAX].strip()
        if name:
            seen.setdefault(name, None)
    return list(seen)[:TAGS_MAX]


def plan(
    found: Iterable[Entry | Problem | Skipped], opts: Options, counted: Census | None = None
) -> Iterator[Planned | Problem | Skipped]:
    """A capture for each entry, in file order; a Problem for each entry that cannot be one;
    a Skipped for each left out on purpose (a repeat of an earlier link among them).

    With the file's :class:`Census`, a repeated link is captured once, at its first
    place, with the tags, stars and earliest date of every copy. An entry with no
    intent (no ``--intent`` and no note of the person's own) is planned without
    one: a source's description is never taken for it.
    """
    seen: set[int] = set()
    for position, item in enumerate(found):
        if not isinstance(item, Entry):
            yield item
            continue
        cid = _known_id(counted, position, item)
        if cid is None:
            yield Problem(
                item.line, f"not a web address (http or https): {cut(item.url or '', 100)!r}"
            )
            continue
        key = _key(cid)
        if counted is not None:
            if position in counted.repeats:
                yield Skipped(item.line, "repeats of a link met earlier in the file (merged)")
                continue
            item = _merge(item, counted.merged.get(key))
        elif key in seen:
            yield Skipped(item.line, "repeats of a link met earlier in the file (merged)")
            continue
        else:
            seen.add(key)
        yield _planned(item, cid, opts)


def _planned(item: Entry, cid: str, opts: Options) -> Planned:
    params: dict[str, Any] = {"capture_id": cid, "priority": opts.priority}
    if item.url is not None:
        params["url"] = item.url
    if item.text is not None:
        params["text"] = item.text
    elif (
        item.html is not None
        and len(item.html.encode()) <= opts.max_html_bytes
        and not is_placeholder(item.html)
    ):
        params["html"] = item.html
    if item.title and item.title.lower() not in PLACEHOLDERS:
        params["title"] = cut(item.title, TITLE_MAX)
    extra = (*_folder_tag(item), *((STARRED_TAG,) if item.starred else ()), *opts.tags)
    tags = _tags(item, extra)
    if tags:
        params["tags"] = tags
    marks = [cut(h, NOTE_MAX) for h in item.highlights[:HIGHLIGHTS_MAX] if h.strip()]
    # What the person highlighted is theirs: without a note, it is the note (and so,
    # without --intent, what the engines read the page for).
    note = item.note or (marked(marks) if marks else None)
    intent = opts.intent or (cut(note, INTENT_MAX) if note else None)
    if intent:
        params["intent"] = intent
    if opts.intent:
        # The person says why now: items not yet processed take this intent.
        params["set_intent"] = True
    archived = item.archived and not opts.process_archived
    if archived:
        params["archived"] = True
    origin: dict[str, Any] = {"source": f"import:{opts.fmt}"}
    if item.saved_at:
        origin["saved_at"] = item.saved_at
    if item.archived and item.archived_at:
        origin["archived_at"] = item.archived_at
    if note:
        origin["note"] = cut(note, NOTE_MAX)
    if item.description:
        origin["description"] = cut(item.description, NOTE_MAX)
    if marks:
        origin["highlights"] = marks
    params["origin"] = origin
    return Planned(
        item.line, params, archived=archived, starred=item.starred, highlights=len(marks)
    )


def marked(highlights: list[str]) -> str:
    """Highlights as one note."""
    return "Highlighted: " + " · ".join(f"“{h}”" for h in highlights)


def with_intent(planned: Planned, intent: str) -> Planned:
    params = {**planned.params, "intent": intent, "set_intent": True}
    return msgspec.structs.replace(planned, params=params)
