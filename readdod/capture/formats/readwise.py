"""Readwise Reader's CSV export: ``Title,URL,ID,Document tags,Saved date,Reading progress,
Location,Seen``.

``Location`` is ``new``, ``later``, ``shortlist``, ``archive`` or ``feed``:
feed rows are what the person's subscriptions brought in, not what they saved,
so they are skipped (and counted). ``Document tags`` is a Python-style list
(``['a', 'b']``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from readdod.capture.formats import pocket
from readdod.capture.formats.entry import Entry, Problem, Skipped, Source, tag_list, when

_QUOTED = re.compile(r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\"""")


def _tags(raw: str | None) -> tuple[str, ...]:
    if not raw:
        return ()
    quoted = [a or b for a, b in _QUOTED.findall(raw)]
    return tag_list(quoted if quoted else raw.strip("[]"), None if quoted else ",")


def read(src: Source) -> Iterator[Entry | Problem | Skipped]:
    for got in pocket.table(src):
        if isinstance(got, Problem):
            yield got
            continue
        line, cell = got
        location = (cell.get("location") or "").lower()
        if location == "feed":
            yield Skipped(line, "feed rows (not saved reading)")
            continue
        url = cell.get("url")
        if url is None:
            yield Problem(line, "the row has no url")
            continue
        yield Entry(
            line=line,
            url=url,
            title=cell.get("title"),
            tags=_tags(cell.get("document tags")),
            saved_at=when(cell.get("saved date")),
            archived=location == "archive",
            starred=location == "shortlist",
        )
