"""Which export a file is, from its name and its first bytes."""

from __future__ import annotations

import re
from typing import Final

#: How much of a file :func:`detect` looks at.
HEAD: Final = 64 * 1024


class UnknownFormat(ValueError):
    """The file matches none of the formats; the message says what it looked like."""


def _has(head: str, *keys: str) -> bool:
    return any(re.search(rf'"{re.escape(k)}"\s*:', head) for k in keys)


def _json_object(head: str) -> str:
    if _has(head, "roots") and _has(head, "bookmark_bar", "checksum"):
        return "chrome"
    if _has(head, "type") and "text/x-moz-place" in head:
        return "firefox"
    if _has(head, "collections") and (_has(head, "links") or _has(head, "email", "username")):
        return "linkwarden"
    if _has(head, "article__url", "article__title"):
        return "readability"
    if _has(head, "bookmarks"):
        return "karakeep"
    raise UnknownFormat(
        'a JSON object that is none of the exports readdod knows (Karakeep\'s "bookmarks",'
        ' Chrome\'s "roots", Firefox\'s places, Linkwarden\'s "collections"); give --format'
    )


def _json_list(head: str) -> str:
    if _has(head, "savedAt", "slug"):
        return "omnivore"
    if _has(head, "is_archived", "is_starred") or (_has(head, "created_at") and _has(head, "url")):
        return "wallabag"
    if _has(head, "is_read", "is_fav"):
        return "wallabag"  # wallabag v1
    if _has(head, "href") and _has(head, "extended", "toread", "shared"):
        return "pinboard"
    if _has(head, "url") and _has(head, "created", "others", "owner"):
        return "delicious"
    raise UnknownFormat(
        "a JSON list that is none of the exports readdod knows (Omnivore, wallabag,"
        " Pinboard, Delicious); give --format"
    )


def detect(name: str, text: str) -> str:
    """The format of the file ``name`` whose text starts with ``text``."""
    head = text[:HEAD].lstrip("\ufeff \t\r\n")
    lower = head[:4096].lower()
    if lower.startswith("<!doctype netscape-bookmark-file") or "<dt><a " in lower:
        return "netscape"
    if lower.startswith(("<!doctype html", "<html")) and re.search(r"<a\s[^>]*href", lower):
        return "netscape"
    if head.startswith("{"):
        return _json_object(head)
    if head.startswith("["):
        return _json_list(head)
    first = [c.strip().strip('"').lower() for c in head.split("\n", 1)[0].strip().split(",")]
    if "url" in first:
        if "folder" in first or "selection" in first:
            return "instapaper"
        if "location" in first and ("document tags" in first or "saved date" in first):
            return "readwise"
        return "pocket"
    lines = [ln.strip() for ln in head.splitlines()]
    first_link = next((ln for ln in lines if ln and not ln.startswith("#")), "")
    if re.match(r"https?://", first_link):
        return "urls"
    if name.lower().endswith(".csv"):
        return "pocket"
    raise UnknownFormat(
        "not a bookmark file, an export readdod knows, nor a list of URLs; give --format"
    )
