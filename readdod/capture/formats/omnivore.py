"""Omnivore's JSON export: the ``metadata_*.json`` files of its export archive.

Each file is a list of ``{"id", "slug", "title", "description", "author", "url",
"state", "labels": [...], "savedAt", "updatedAt", "publishedAt"}``; ``labels``
are the person's tags (names, or objects with a ``name``). The archive's
``content/<slug>.html`` is the page as Omnivore kept it: given as ``pages``
(by slug), it is captured with the link, so a page gone from the web still
gets its card.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from readdod.capture.formats import jsonscan
from readdod.capture.formats.entry import Entry, Problem, clean, tag_list, when


def read(text: str, pages: Mapping[str, str] | None = None) -> Iterator[Entry | Problem]:
    for got in jsonscan.entries(text):
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
        slug = obj.get("slug")
        page = pages.get(slug) if pages and isinstance(slug, str) else None
        yield Entry(
            line=line,
            url=url,
            html=page if page and page.strip() else None,
            title=clean(obj.get("title")),
            tags=tag_list(obj.get("labels")),
            saved_at=when(obj.get("savedAt")),
            note=clean(obj.get("note")) or clean(obj.get("description")),
        )
