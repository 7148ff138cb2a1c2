"""Karakeep's JSON export: ``{"bookmarks": [...]}``.

Each bookmark is ``{"createdAt": <seconds>, "title", "tags": [...], "content":
{"type": "link", "url"} | {"type": "text", "text"} | null, "note", "archived"}``
(newer exports add ``description``, ``lists``, ...; they are read when useful).
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


def read(doc: Source) -> Iterator[Entry | Problem]:
    for got in jsonscan.entries(doc, "bookmarks"):
        if isinstance(got, Problem):
            yield got
            continue
        line, obj = got
        if not isinstance(obj, dict):
            yield Problem(line, "a bookmark that is not a JSON object")
            continue
        content = obj.get("content")
        kind = content.get("type") if isinstance(content, dict) else None
        url = clean(content.get("url")) if isinstance(content, dict) and kind == "link" else None
        text = clean(content.get("text")) if isinstance(content, dict) and kind == "text" else None
        if url is None and text is None:
            what = f"a {kind!r} bookmark" if isinstance(kind, str) else "a bookmark"
            yield Problem(
                line, f"{what} with neither a link nor a text (images and files are not imported)"
            )
            continue
        description = content.get("description") if isinstance(content, dict) else None
        yield Entry(
            line=line,
            url=url,
            text=text,
            title=clean(obj.get("title")),
            tags=tag_list(obj.get("tags")),
            saved_at=when(obj.get("createdAt")),
            note=clean(obj.get("note")),
            description=clean(obj.get("description")) or clean(description),
            archived=truthy(obj.get("archived")),
            starred=truthy(obj.get("favourited")) or truthy(obj.get("favorited")),
        )
