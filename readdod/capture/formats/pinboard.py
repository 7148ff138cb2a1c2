"""Pinboard's JSON export and Delicious's: one list of links.

Pinboard: ``{"href", "description" (the title), "extended" (the person's
description), "time", "tags": "a b", "toread": "yes"|"no", "shared"}``.
Delicious: ``{"url", "title", "description", "tags": [...], "created"
(seconds), "private"}``. Pinboard's ``toread: no`` is a bookmark kept, not a
read-later finished, so neither is archived.
"""

from __future__ import annotations

from collections.abc import Iterator

from readdod.capture.formats import jsonscan
from readdod.capture.formats.entry import Entry, Problem, Source, clean, tag_list, when


def read(src: Source) -> Iterator[Entry | Problem]:
    for got in jsonscan.entries(src):
        if isinstance(got, Problem):
            yield got
            continue
        line, obj = got
        if not isinstance(obj, dict):
            yield Problem(line, "an entry that is not a JSON object")
            continue
        if "href" in obj:  # Pinboard
            url, title, note = obj.get("href"), obj.get("description"), obj.get("extended")
            raw_tags, saved = obj.get("tags"), obj.get("time")
        else:  # Delicious
            url, title, note = obj.get("url"), obj.get("title"), obj.get("description")
            raw_tags, saved = obj.get("tags"), obj.get("created")
        link = clean(url)
        if link is None:
            yield Problem(line, "the entry has no link")
            continue
        yield Entry(
            line=line,
            url=link,
            title=clean(title),
            tags=tag_list(raw_tags, " ") if isinstance(raw_tags, str) else tag_list(raw_tags),
            saved_at=when(saved),
            # Written by the person on Pinboard and Delicious (no teaser is fetched there).
            note=clean(note),
        )
