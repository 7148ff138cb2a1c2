"""Readers of the files people export their saved links to (pure: text in, entries out).

::

    entry        Entry (one saved link or text), Problem (one entry that cannot be read),
                 Skipped (one left out on purpose, counted)
    netscape     bookmark HTML, as every browser exports it (and Pocket's, Shaarli's)
    browsers     Firefox's JSON backup, Chrome's Bookmarks file
    pocket       Pocket's CSV export
    instapaper   Instapaper's CSV export
    readwise     Readwise Reader's CSV export
    omnivore     Omnivore's JSON export (metadata_*.json, highlights/*.md)
    wallabag     wallabag's JSON export (v1 and v2)
    karakeep     Karakeep's JSON export
    readability  Readability's JSON export
    pinboard     Pinboard's and Delicious's JSON exports
    linkwarden   Linkwarden's JSON export
    urllist      one URL a line
    jsonscan     JSON arrays read entry by entry from a stream, each with its line number
    csvscan      CSV rows read from a stream, a broken row skipped
    tree         a JSON tree read whole, within bounds
    detect       which of these a file is

A reader takes the file's text or the open file and reads it as it goes; it
never stops at a bad entry: it yields a :class:`Problem` naming its line and
goes on with the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from readdod.capture.formats import (
    browsers,
    instapaper,
    karakeep,
    linkwarden,
    netscape,
    omnivore,
    pinboard,
    pocket,
    readability,
    readwise,
    urllist,
    wallabag,
)
from readdod.capture.formats.detect import detect
from readdod.capture.formats.entry import Entry, Problem, Skipped, Source

Reader = Callable[[Source], Iterator[Entry | Problem | Skipped]]

#: Every format by the name ``--format`` takes.
READERS: Final[dict[str, Reader]] = {
    "netscape": netscape.read,
    "firefox": browsers.read_firefox,
    "chrome": browsers.read_chrome,
    "pocket": pocket.read,
    "instapaper": instapaper.read,
    "readwise": readwise.read,
    "omnivore": omnivore.read,
    "wallabag": wallabag.read,
    "karakeep": karakeep.read,
    "readability": readability.read,
    "pinboard": pinboard.read,
    "delicious": pinboard.read,
    "linkwarden": linkwarden.read,
    "urls": urllist.read,
}

__all__ = ["READERS", "Entry", "Problem", "Reader", "Skipped", "Source", "detect"]
