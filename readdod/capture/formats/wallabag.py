"""Wallabag's JSON export (All articles → JSON), as Wallabag's own importer reads it.

A list of ``{"id", "title", "url", "content", "is_archived", "is_starred",
"tags": [...], "created_at", "mimetype", "language", "annotations", ...}``.
``content`` is the article's HTML as Wallabag kept it: it is captured with the
link, so a page gone from the web still yields its card. wallabag v1's export
has ``is_read``, ``is_fav`` and ``tags`` as one comma-joined string.
"""

from __future__ import annotations

from collections.abc import Iterator

from readdod.capture.formats import jsonscan
from readdod.capture.formats.entry import (
    Entry,
    Problem,
    Source,
    clean,
    tag_list,
    truthy,
    when,
)


def read(src: Source) -> Iterator[Entry | Problem]:
    for got in jsonscan.entries(src):
        if isinstance(got, Problem):
            yield got
            continue
        line, obj = got
        if not isinstance(obj, dict):
            yield Problem(line, "an entry that is not a JSON object")
            continue
        url = clean(obj.get("url"))
        if url is None:
            yield Problem(line, "the entry has no url")
            continue
        content = obj.get("content")
        yield Entry(
            line=line,
            url=url,
            html=content if isinstance(content, str) and content.strip() else None,
            title=clean(obj.get("title")),
            tags=tag_list(obj.get("tags"), ","),
            saved_at=when(obj.get("created_at")),
            note=_annotations(obj.get("annotations")),
            archived=truthy(obj.get("is_archived")) or truthy(obj.get("is_read")),
            archived_at=when(obj.get("archived_at")),
            starred=truthy(obj.get("is_starred")) or truthy(obj.get("is_fav")),
            highlights=_quotes(obj.get("annotations")),
        )


def _annotations(value: object) -> str | None:
    """What the person wrote on the article's highlights, one note a line."""
    if not isinstance(value, list):
        return None
    notes = [clean(a.get("text")) for a in value if isinstance(a, dict)]
    return "\n".join(n for n in notes if n) or None


def _quotes(value: object) -> tuple[str, ...]:
    """The passages the person highlighted."""
    if not isinstance(value, list):
        return ()
    return tuple(q for a in value if isinstance(a, dict) and (q := clean(a.get("quote"))))
