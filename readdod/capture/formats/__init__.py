"""Readers of the files people export their saved links to (pure: text in, entries out).

::

    entry      Entry (one saved link or text) and Problem (one entry that cannot be read)
    netscape   bookmark HTML, as every browser exports it (and Pocket's old HTML export)
    pocket     Pocket's CSV export
    omnivore   Omnivore's JSON export (metadata_*.json)
    wallabag   Wallabag's JSON export
    karakeep   Karakeep's JSON export
    urllist    one URL a line
    jsonscan   JSON arrays read entry by entry, each with its line number
    detect     which of these a file is

A reader never stops at a bad entry: it yields a :class:`Problem` naming its
line and goes on with the next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from readdod.capture.formats import karakeep, netscape, omnivore, pocket, urllist, wallabag
from readdod.capture.formats.detect import detect
from readdod.capture.formats.entry import Entry, Problem

Reader = Callable[[str], Iterator[Entry | Problem]]

#: Every format by the name ``--format`` takes.
READERS: Final[dict[str, Reader]] = {
    "netscape": netscape.read,
    "pocket": pocket.read,
    "omnivore": omnivore.read,
    "wallabag": wallabag.read,
    "karakeep": karakeep.read,
    "urls": urllist.read,
}

__all__ = ["READERS", "Entry", "Problem", "Reader", "detect"]
