"""Readability's JSON export: ``{"bookmarks": [{"article__url", "article__title",
"article__excerpt", "date_added", "archive", "date_archived", "favorite"}],
"recommendations": []}``, as wallabag's own importer reads it."""

from __future__ import annotations

from collections.abc import Iterator

from readdod.capture.formats import jsonscan
from readdod.capture.formats.entry import Entry, Problem, Source, clean, truthy, when


def read(src: Source) -> Iterator[Entry | Problem]:
    for got in jsonscan.entries(src, "bookmarks"):
        if isinstance(got, Problem):
            yield got
            continue
        line, obj = got
        if not isinstance(obj, dict):
            yield Problem(line, "a bookmark that is not a JSON object")
            continue
        url = clean(obj.get("article__url"))
        if url is None:
            yield Problem(line, "the bookmark has no article__url")
            continue
        yield Entry(
            line=line,
            url=url,
            title=clean(obj.get("article__title")),
            saved_at=when(obj.get("date_added")),
            description=clean(obj.get("article__excerpt")),
            archived=truthy(obj.get("archive")),
            archived_at=when(obj.get("date_archived")),
            starred=truthy(obj.get("favorite")),
        )
