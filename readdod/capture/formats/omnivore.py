"""Omnivore's JSON export: the ``metadata_*.json`` files of its export archive.

Each file is a list of ``{"id", "slug", "title", "description", "author", "url",
"state", "labels": [...], "savedAt", "updatedAt", "publishedAt"}``; ``labels``
are the person's tags (names, or objects with a ``name``); ``state`` is
``Archived`` for what the person finished. ``description`` is the publisher's
teaser: kept as the description, never the intent. The archive's
``highlights/<slug>.md`` holds what the person highlighted (given as
``highlights``, by slug). The archive's
``content/<slug>.html`` is the page as Omnivore kept it: given as ``pages``
(by slug), it is captured with the link, so a page gone from the web still
gets its card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from readdod.capture.formats import jsonscan
from readdod.capture.formats.entry import Entry, Problem, Source, clean, tag_list, when

#: One slug's page or highlights from the archive, read when its entry is.
Lookup = Callable[[str], str | None]


def highlights_of(markdown: str) -> tuple[str, ...]:
    """The passages of an Omnivore ``highlights/*.md``: its ``> `` quotes, each with the
    note under it; the whole text when it quotes nothing."""
    found: list[str] = []
    quote: list[str] = []
    for raw in markdown.splitlines():
        line = raw.strip()
        if line.startswith(">"):
            quote.append(line.lstrip("> ").strip())
            continue
        if quote:
            found.append(" ".join(q for q in quote if q))
            quote = []
        if line and found and not line.startswith(("#", "[")):
            found[-1] = f"{found[-1]} — {line}"
    if quote:
        found.append(" ".join(q for q in quote if q))
    found = [f for f in found if f]
    if not found and markdown.strip():
        found = [" ".join(markdown.split())]
    return tuple(found)


def read(
    src: Source, pages: Lookup | None = None, marks: Lookup | None = None
) -> Iterator[Entry | Problem]:
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
        slug = obj.get("slug")
        page = pages(slug) if pages and isinstance(slug, str) else None
        marked = marks(slug) if marks and isinstance(slug, str) else None
        state = str(obj.get("state") or "").lower()
        yield Entry(
            line=line,
            url=url,
            html=page if page and page.strip() else None,
            title=clean(obj.get("title")),
            tags=tag_list(obj.get("labels")),
            saved_at=when(obj.get("savedAt")),
            note=clean(obj.get("note")),
            description=clean(obj.get("description")),
            archived=state == "archived" or obj.get("isArchived") is True,
            highlights=highlights_of(marked) if marked else (),
        )
