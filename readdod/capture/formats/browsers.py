"""Browsers' own bookmark files: Firefox's JSON backup and Chrome's ``Bookmarks``.

Firefox: ``{"type": "text/x-moz-place-container", "root": "placesRoot",
"children": [...]}``, links ``{"type": "text/x-moz-place", "uri", "title",
"dateAdded" (µs), "tags": "a,b"}``. Chrome (and Edge, Brave): ``{"roots":
{"bookmark_bar": {"type": "folder", "children": [...]}, ...}}``, links
``{"type": "url", "url", "name", "date_added"}`` in microseconds since 1601.
A folder path (the browser's own roots left out) becomes a tag.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from readdod.capture.formats import tree
from readdod.capture.formats.entry import (
    Entry,
    Problem,
    Skipped,
    Source,
    clean,
    from_epoch,
    tag_list,
)

#: Seconds between 1601-01-01 (Chrome's epoch) and 1970-01-01.
_WEBKIT_EPOCH = 11_644_473_600


def read_firefox(src: Source) -> Iterator[Entry | Problem | Skipped]:
    doc = tree.load(src)
    if isinstance(doc, Problem):
        yield doc
        return
    stack: list[tuple[Any, tuple[str, ...]]] = [(doc, ())]
    count = 0
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        count += 1
        kind = node.get("type")
        if kind == "text/x-moz-place-container":
            name = clean(node.get("title"))
            inner = path if node.get("root") or not name else (*path, name)
            children = node.get("children")
            if isinstance(children, list):
                stack.extend((c, inner) for c in reversed(children))
        elif kind == "text/x-moz-place":
            uri = clean(node.get("uri"))
            if uri is None or uri.startswith(("place:", "javascript:")):
                yield Skipped(count, "browser queries and scripts (not links)")
                continue
            yield Entry(
                line=count,
                url=uri,
                title=clean(node.get("title")),
                tags=tag_list(node.get("tags") or "", ","),
                saved_at=from_epoch(node.get("dateAdded")),
                description=_anno(node.get("annos")),
                folder=path,
            )
        elif kind == "text/x-moz-place-separator":
            yield Skipped(count, "separators")


def _anno(annos: object) -> str | None:
    if not isinstance(annos, list):
        return None
    for a in annos:
        if isinstance(a, dict) and a.get("name") == "bookmarkProperties/description":
            return clean(a.get("value"))
    return None


def _webkit(value: object) -> str | None:
    try:
        micros = int(str(value))
    except ValueError:
        return None
    if micros <= 0:
        return None
    try:
        when = datetime.datetime.fromtimestamp(micros / 1e6 - _WEBKIT_EPOCH, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return from_epoch(when.timestamp())


def read_chrome(src: Source) -> Iterator[Entry | Problem | Skipped]:
    doc = tree.load(src)
    if isinstance(doc, Problem):
        yield doc
        return
    roots = doc.get("roots") if isinstance(doc, dict) else None
    if not isinstance(roots, dict):
        yield Problem(1, 'no "roots" object (not a Chrome Bookmarks file)')
        return
    # The roots (bookmarks bar, other, mobile) are the browser's: their children start at ().
    stack: list[tuple[Any, tuple[str, ...]]] = []
    for root in reversed(list(roots.values())):
        if isinstance(root, dict) and isinstance(root.get("children"), list):
            stack.extend((c, ()) for c in reversed(root["children"]))
    count = 0
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        count += 1
        if node.get("type") == "folder":
            name = clean(node.get("name"))
            inner = (*path, name) if name else path
            children = node.get("children")
            if isinstance(children, list):
                stack.extend((c, inner) for c in reversed(children))
        elif node.get("type") == "url":
            url = clean(node.get("url"))
            if url is None or url.startswith("javascript:"):
                yield Skipped(count, "browser scripts (not links)")
                continue
            yield Entry(
                line=count,
                url=url,
                title=clean(node.get("name")),
                saved_at=_webkit(node.get("date_added")),
                folder=path,
            )
