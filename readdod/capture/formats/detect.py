"""Which export a file is, from its name and its first bytes."""

from __future__ import annotations

import re
from typing import Final

#: How much of a file :func:`detect` looks at.
HEAD: Final = 64 * 1024


class UnknownFormat(ValueError):
    """The file matches none of the formats; the message says what it looked like."""


def detect(name: str, text: str) -> str:
    """The format of the file ``name`` whose text starts with ``text``."""
    head = text[:HEAD].lstrip("\ufeff \t\r\n")
    lower = head[:4096].lower()
    if lower.startswith("<!doctype netscape-bookmark-file") or "<dt><a " in lower:
        return "netscape"
    if lower.startswith(("<!doctype html", "<html")) and re.search(r"<a\s[^>]*href", lower):
        return "netscape"
    if head.startswith("{"):
        if re.match(r'\{\s*"bookmarks"\s*:', head) or '"bookmarks"' in head:
            return "karakeep"
        raise UnknownFormat('a JSON object without a "bookmarks" list (not a Karakeep export)')
    if head.startswith("["):
        if re.search(r'"savedAt"\s*:|"labels"\s*:|"slug"\s*:', head):
            return "omnivore"
        if re.search(r'"is_archived"\s*:|"is_starred"\s*:|"created_at"\s*:', head):
            return "wallabag"
        raise UnknownFormat(
            "a JSON list that is neither Omnivore's (savedAt, labels) nor Wallabag's"
            " (is_archived, created_at) export; give --format"
        )
    first = head.split("\n", 1)[0].strip().lower()
    if "url" in [c.strip().strip('"') for c in first.split(",")]:
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
