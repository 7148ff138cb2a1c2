"""Linkwarden's export (Settings → Data → Export): the account with its
``collections``, each ``{"name", "links": [{"url", "name", "description",
"tags": [{"name"}], "createdAt", "pinnedBy": [...]}]}``. A collection is a
folder (its name a tag); a pinned link is starred."""

from __future__ import annotations

from collections.abc import Iterator

from readdod.capture.formats import tree
from readdod.capture.formats.entry import (
    Entry,
    Problem,
    Source,
    clean,
    folder_path,
    tag_list,
    when,
)


def read(src: Source) -> Iterator[Entry | Problem]:
    doc = tree.load(src)
    if isinstance(doc, Problem):
        yield doc
        return
    collections = doc.get("collections") if isinstance(doc, dict) else None
    if not isinstance(collections, list):
        yield Problem(1, 'no "collections" list (not a Linkwarden export)')
        return
    count = 0
    for coll in collections:
        if not isinstance(coll, dict):
            continue
        folder = folder_path([str(coll.get("name") or "")])
        links = coll.get("links")
        for link in links if isinstance(links, list) else []:
            count += 1
            if not isinstance(link, dict):
                yield Problem(count, "a link that is not a JSON object")
                continue
            url = clean(link.get("url"))
            if url is None:
                yield Problem(count, "a link without a url (files are not imported)")
                continue
            pinned = link.get("pinnedBy")
            yield Entry(
                line=count,
                url=url,
                title=clean(link.get("name")),
                tags=tag_list(link.get("tags")),
                saved_at=when(link.get("createdAt")),
                note=clean(link.get("description")),
                starred=bool(pinned) if isinstance(pinned, list) else False,
                folder=folder,
            )
