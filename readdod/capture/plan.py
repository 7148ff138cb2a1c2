"""An import's plan: each entry an export holds turned into a capture request (pure).

The capture_id is derived from what the entry is (its canonical URL, or its
text), so importing the same file again, or another export holding the same
link, adds nothing, and an import cut short is resumed by running it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any, Final

import msgspec

from readdod import urls
from readdod.capture.formats import Entry, Problem

#: Marks the capture_ids an import makes.
CAPTURE_ID_PREFIX: Final = "import:"
#: The bounds a capture takes (see :class:`readdod.models.CaptureRequest`).
INTENT_MAX: Final = 2_000
TITLE_MAX: Final = 500
TAG_MAX: Final = 100
TAGS_MAX: Final = 50
NOTE_MAX: Final = 10_000
#: Priority of imported items unless told: years of saved links wait behind today's captures.
DEFAULT_PRIORITY: Final = "P3"


class Options(msgspec.Struct, frozen=True, kw_only=True):
    fmt: str
    intent: str | None = None
    tags: tuple[str, ...] = ()
    priority: str = DEFAULT_PRIORITY
    #: Larger pages handed in by an export are dropped; the link is fetched instead.
    max_html_bytes: int = 10 * 2**20


class Planned(msgspec.Struct, frozen=True):
    """One capture to send: its line in the file and the ``capture`` params."""

    line: int
    params: dict[str, Any]

    @property
    def needs_intent(self) -> bool:
        return "intent" not in self.params


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


def plan(found: Iterable[Entry | Problem], opts: Options) -> Iterator[Planned | Problem]:
    """A capture for each entry, in file order; a Problem for each entry that cannot be one.

    An entry already met earlier in the file (the same link twice) is left out:
    its first occurrence is the one captured. An entry with no intent (no
    ``--intent`` and no note) is planned without one; :func:`with_intent`
    gives it one or refuses it.
    """
    seen: dict[str, int] = {}
    for item in found:
        if isinstance(item, Problem):
            yield item
            continue
        cid = capture_id(item)
        if cid is None:
            yield Problem(
                item.line, f"not a web address (http or https): {cut(item.url or '', 100)!r}"
            )
            continue
        if cid in seen:
            continue
        seen[cid] = item.line
        params: dict[str, Any] = {"capture_id": cid, "priority": opts.priority}
        if item.url is not None:
            params["url"] = item.url
        if item.text is not None:
            params["text"] = item.text
        elif item.html is not None and len(item.html.encode()) <= opts.max_html_bytes:
            params["html"] = item.html
        if item.title:
            params["title"] = cut(item.title, TITLE_MAX)
        tags = _tags(item, opts.tags)
        if tags:
            params["tags"] = tags
        intent = opts.intent or (cut(item.note, INTENT_MAX) if item.note else None)
        if intent:
            params["intent"] = intent
        origin: dict[str, str] = {"source": f"import:{opts.fmt}"}
        if item.saved_at:
            origin["saved_at"] = item.saved_at
        if item.note:
            origin["note"] = cut(item.note, NOTE_MAX)
        params["origin"] = origin
        yield Planned(item.line, params)


def with_intent(planned: Planned, intent: str) -> Planned:
    return Planned(planned.line, {**planned.params, "intent": intent})
