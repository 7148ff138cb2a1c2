"""Instapaper's CSV export: ``URL,Title,Selection,Folder,Timestamp`` (newer exports add
``Tags``, a JSON list).

``Folder`` is ``Unread``, ``Archive``, ``Starred`` or a folder of the person's:
Archive is read, Starred is starred, any other is a tag. ``Selection`` is the
passage the person highlighted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from readdod.capture.formats import pocket
from readdod.capture.formats.entry import Entry, Problem, Source, from_epoch, tag_list


def _tags(raw: str | None) -> tuple[str, ...]:
    if not raw:
        return ()
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return tag_list(raw, ",")
    return tag_list(value) if isinstance(value, list) else ()


def read(src: Source) -> Iterator[Entry | Problem]:
    for got in pocket.table(src):
        if isinstance(got, Problem):
            yield got
            continue
        line, cell = got
        url = cell.get("url")
        if url is None:
            yield Problem(line, "the row has no url")
            continue
        folder = cell.get("folder") or ""
        own = folder.lower() not in ("", "unread", "archive", "starred")
        selection = cell.get("selection")
        yield Entry(
            line=line,
            url=url,
            title=cell.get("title"),
            tags=(*_tags(cell.get("tags")), *((folder,) if own else ())),
            saved_at=from_epoch(cell.get("timestamp")),
            archived=folder.lower() == "archive",
            starred=folder.lower() == "starred",
            highlights=(selection,) if selection else (),
            folder=(folder,) if own else (),
        )
